# Training for scripts/release (not a benchmark): recursion, `let`, `with`, `rec`,
# functions with formals and defaults, strings built and taken apart.
let
  # the leaves of a binary split, counted by recursion
  leaves = low: high: if high - low < 2 then 1 else let middle = (low + high) / 2; in leaves low middle + leaves middle high;
  service = { name, port ? 8000, user ? name, after ? [ ], ... }@args:
    let
      unit = ''
        [Service]
        User=${user}
        ExecStart=/usr/bin/${name} --port ${toString port}
        After=${builtins.concatStringsSep " " after}
      '';
    in
    { inherit name port unit; extra = args ? extra; };
  services = builtins.genList (i: service ({ name = "svc${toString i}"; } // (if i - (i / 2) * 2 == 0 then { port = 9000 + i; after = [ "a" "b" ]; } else { extra = i; }))) 3000;
  deep = x:
    let a = x + 1; in
    let b = a * 2; in
    let c = b - a; in
    let d = c + b; in
    with { e = d + 1; }; rec { f = e + 1; g = f * 2; }.g;
  text = builtins.concatStringsSep "\n" (map (s: s.unit) services);
  json = builtins.toJSON (map (s: { inherit (s) name port; }) services);
in
{
  leaves = leaves 0 30000;
  deep = builtins.foldl' (acc: i: acc + deep i) 0 (builtins.genList (i: i) 20000);
  length = builtins.stringLength text;
  lines = builtins.length (builtins.filter builtins.isString (builtins.split "\n" text));
  replaced = builtins.stringLength (builtins.replaceStrings [ "User=" "svc" ] [ "U=" "s" ] text);
  matched = builtins.length (builtins.filter (s: builtins.match "svc[0-9]*7" s.name != null) services);
  parsed = builtins.length (builtins.fromJSON json);
  hashed = builtins.substring 0 8 (builtins.hashString "sha256" text);
  extras = builtins.length (builtins.filter (s: s.extra) services);
  interpolated = builtins.stringLength (builtins.foldl' (acc: i: "${acc}${toString i},") "" (builtins.genList (i: i) 3000));
  compared = builtins.length (builtins.filter (s: s == { inherit (s) name port unit extra; }) services);
}
