# `removeAttrs` with many names (sorted and searched), `intersectAttrs` with either
# side the smaller, `listToAttrs` of names in order and not (the first of a name wins).
let
  big = builtins.listToAttrs (builtins.genList (i: { name = "n${toString i}"; value = i; }) 30);
  small = { n3 = "a"; n12 = "b"; missing = "c"; };
in
{
  removed = builtins.attrNames (builtins.removeAttrs big [ "n1" "n2" "n3" "n4" "n5" "n6" "n7" "n8" "n9" "n10" "absent" "n29" "n1" ]);
  removedFew = builtins.removeAttrs small [ "n3" "absent" ];
  smallFirst = builtins.intersectAttrs small big;
  bigFirst = builtins.intersectAttrs big small;
  inOrder = builtins.listToAttrs [ { name = "a"; value = 1; } { name = "b"; value = 2; } { name = "c"; value = 3; } ];
  firstWins = builtins.listToAttrs [ { name = "b"; value = 1; } { name = "a"; value = 2; } { name = "b"; value = 3; } { name = "a"; value = 4; } ];
  values = builtins.attrValues { z = 1; a = 2; m = 3; };
}
