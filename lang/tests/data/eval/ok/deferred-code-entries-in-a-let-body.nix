# An inventory written as code: a `let` above the set, entries naming what it
# binds. Entries of some size are lowered when first read, in the scopes they are
# written in; the values, sharing (`«repeated»`) and positions are as if lowered
# with the file.
let
  base = [ "common" "monitoring" ];
  registry = "registry.example:5000";
  mk = name: { inherit name; port = 8000; };
  true = "shadowed true";
  settings = { replicas = 2; image = "${registry}/app"; };
in
{
  n1 = { modules = base ++ [ "web" "db" ]; address = "10.0.0.1"; registry = registry; };
  n2 = { modules = base; again = base; image = settings.image; flag = true; key = "age1xyz"; };
  n3 = { made = mk "three"; port = (mk "x").port + 1; text = "${registry} and ${toString settings.replicas}"; };
  n4 = { when = if settings.replicas > 1 then "many" else "one"; has = settings ? image; padding = "a longer string"; };
  n5 = { nested = { deeper = { list = base ++ base; set = settings // { replicas = 3; }; }; }; pad = "more padding here"; };
  n6 = { a.b.c = registry; a.b.d = base; a.e = [ { x = settings.replicas; } ]; padding = "a longer string"; };
  n7 = builtins.concatStringsSep "," (base ++ [ "a much longer list of words" "to pass the size" ]);
  pos = (builtins.unsafeGetAttrPos "address" { address = "10.0.0.9"; padding = "a longer string, longer"; }).line;
}
