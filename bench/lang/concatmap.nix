# `concatMap`, as modules expand a list of units into their files: 30,000 units
# each expanded into four strings, then a second `concatMap` keeps some.
let
  units = builtins.genList (i: { name = "unit${toString i}"; ports = [ i (i + 1) ]; }) 30000;
  files = builtins.concatMap (u: [ "/etc/${u.name}.conf" "/run/${u.name}.pid" ] ++ map (p: "${u.name}:${toString p}") u.ports) units;
  kept = builtins.concatMap (f: if builtins.substring 0 5 f == "/etc/" then [ f ] else [ ]) files;
in
{
  files = builtins.length files;
  kept = builtins.length kept;
  last = builtins.elemAt files (builtins.length files - 1);
}
