# Deep `let` nesting, as module bodies bind helper after helper: a function with
# twelve nested `let`s, each reading the ones outside it, called 40,000 times.
let
  f = i:
    let a = i + 1; in
    let b = a * 2; in
    let c = b + a; in
    let d = { x = c; y = b; }; in
    let e = d.x + d.y + a; in
    let g = if e > 100 then e - 100 else e; in
    let h = [ a b c g ]; in
    let j = builtins.length h + g; in
    let k = "${toString j}-${toString a}"; in
    let l = builtins.stringLength k + j; in
    let m = { inherit a b c l; }; in
    let n = m.a + m.b + m.c + m.l; in
    n + e;
in
builtins.foldl' (sum: i: sum + f i) 0 (builtins.genList (i: i) 40000)
