# A chain of `//` is merged at once: the last set having a name wins, empty sets
# change nothing, and the values stay lazy.
let
  a = { x = 1; y = 2; lazy = throw "not forced"; };
  chained = a // { y = 3; } // { } // { z = 4; x = 0; } // { w = 5; };
  same = { } // a // { } // { };
in
{
  chained = builtins.removeAttrs chained [ "lazy" ];
  names = builtins.attrNames chained;
  values = [ chained.x chained.y chained.z chained.w ];
  same = builtins.removeAttrs same [ "lazy" ];
  empty = { } // { } // { };
  nested = ({ p = 1; } // { q = 2; }) // { p = 3; } // { r = 4; };
}
