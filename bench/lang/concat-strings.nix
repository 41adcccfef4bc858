# `concatStringsSep` of 200,000 interpolated strings.
let
  text = builtins.concatStringsSep "," (builtins.genList (i: "item-${toString i}-${toString (i * 7)}") 200000);
in
{
  length = builtins.stringLength text;
  tail = builtins.substring (builtins.stringLength text - 30) 30 text;
}
