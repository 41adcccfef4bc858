# mesh.lib.trivial: functions on functions and booleans (nixpkgs lib/trivial.nix).
lib:
{
  id = x: x;
  const = x: _: x;
  flip = f: a: b: f b a;
  pipe = builtins.foldl' (x: f: f x);
  fix = f: let x = f x; in x;
  boolToString = b: if b then "true" else "false";
  mapNullable = f: a: if a == null then a else f a;
  min = x: y: if x < y then x else y;
  max = x: y: if x > y then x else y;
  mod = base: int: base - (int * (builtins.div base int));
  inherit (builtins) seq deepSeq;
}
