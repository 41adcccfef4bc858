# Selections the evaluator shortcuts: of a set already evaluated (shared, not
# suspended), of `builtins` (looked up when compiled), and names made at run time
# found by names written in code and the other way round.
let
  x = { a = 1; nested = { b = 2; }; lazy = throw "never"; };
  forced = builtins.seq x {
    inherit (x) a;
    b = x.nested.b;
    c = x.missing or 5;
    d = x.nested.missing or 6;
    lazyName = builtins.isAttrs x;
  };
  builtinsShadowed = let builtins = { foldl' = "mine"; }; in builtins.foldl';
  withNotShadowing = with { builtins = { length = "with"; }; }; builtins.length [ 1 2 ];
  n = "po" + "rt";
  dynamic = { ${n} = 1; };
  listed = builtins.listToAttrs [ { name = "port"; value = 2; } { name = n + "s"; value = 3; } ];
in
{
  inherit forced builtinsShadowed withNotShadowing;
  sum = builtins.foldl' (s: v: s + v) 0 [ 1 2 3 ];
  missingBuiltin = builtins.noSuchBuiltin or "fallback";
  hasBuiltin = builtins ? foldl';
  dynamicByStatic = dynamic.port;
  listedByStatic = listed.port + listed.ports;
  staticByDynamic = { port = 4; }.${n};
  getAttr = builtins.getAttr n { port = 5; };
  merged = builtins.attrNames ({ port = 1; zed = 2; } // listed // { ${n + "a"} = 0; });
  lazySkipped = builtins.attrNames x;
}
