# nixpkgs' `recursiveUpdate` (zipAttrsWith down to the leaves), as configurations
# merge defaults with overrides: 3,000 small module-like sets folded into one.
let
  recursiveUpdate = lhs: rhs:
    let
      f = path: builtins.zipAttrsWith (name: values:
        if builtins.length values == 1 || !(builtins.isAttrs (builtins.elemAt values 1) && builtins.isAttrs (builtins.head values))
        then builtins.head values
        else f (path ++ [ name ]) values);
    in
    f [ ] [ rhs lhs ];
  module = i: {
    services."s${toString (i / 10)}" = { "option${toString i}" = i; enable = true; };
    networking.ports = [ i ];
  };
  merged = builtins.foldl' (acc: i: recursiveUpdate acc (module i)) { } (builtins.genList (i: i) 3000);
in
{
  services = builtins.length (builtins.attrNames merged.services);
  last = merged.services.s299.option2999;
  ports = merged.networking.ports;
}
