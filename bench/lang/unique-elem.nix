# nixpkgs' `unique` (a fold of `elem` and `++`), as module code de-duplicates names:
# 4,000 strings of which 574 are distinct, then the distinct ones grouped by prefix.
let
  unique = builtins.foldl' (acc: e: if builtins.elem e acc then acc else acc ++ [ e ]) [ ];
  names = builtins.genList (i: "n${toString (i - i / 3 * 3 + i / 7)}") 4000;
  distinct = unique names;
  groups = builtins.groupBy (name: builtins.substring 0 2 name) distinct;
in
{
  distinct = builtins.length distinct;
  groups = builtins.length (builtins.attrNames groups);
}
