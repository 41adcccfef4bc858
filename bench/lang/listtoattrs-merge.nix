# `listToAttrs` of 100,000 keys, merged with another 100,000 with `//`.
let
  evens = builtins.listToAttrs (builtins.genList (i: { name = "k${toString (i * 2)}"; value = i; }) 100000);
  threes = builtins.listToAttrs (builtins.genList (i: { name = "k${toString (i * 3)}"; value = -i; }) 100000);
  merged = evens // threes;
in
{
  size = builtins.length (builtins.attrNames merged);
  sample = [ merged.k0 merged.k6 merged.k199998 merged.k299997 ];
}
