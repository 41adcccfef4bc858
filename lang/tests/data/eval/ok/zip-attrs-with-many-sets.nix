# zipAttrsWith over sets with names in common and apart: the groups in name order,
# each group's values in the order of the sets; an unused group is never called
let
  sets = [ { b = 1; a = 2; } { c = 3; b = 4; } { } { a = 5; d = 6; b = 7; } { e = throw "unused"; } ];
  zipped = builtins.zipAttrsWith (name: values: { inherit name values; count = builtins.length values; }) sets;
in
{
  inherit (zipped) a b c d;
  names = builtins.attrNames zipped;
  single = builtins.zipAttrsWith (name: values: values) [ { x = 1; } ];
  none = builtins.zipAttrsWith (name: values: values) [ ];
}
