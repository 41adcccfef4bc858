# deepSeq over sets and lists shared many times, cyclic through sets and lists, and
# with an error inside a set that holds no set (it must still be reached).
let
  leaf = { a = 1; b = "x"; };
  shared = [ leaf leaf { c = leaf; d = [ leaf ]; } leaf ];
  cyclic = { self = cyclic; list = [ cyclic leaf ]; n = 2; };
  listCycle = [ 1 { back = listCycle; } ];
  broken = { ok = 1; inner = { fine = 2; bad = throw "deep"; }; };
in
{
  shared = builtins.deepSeq shared (builtins.length shared);
  cyclic = builtins.deepSeq cyclic cyclic.n;
  listCycle = builtins.deepSeq listCycle (builtins.length listCycle);
  broken = (builtins.tryEval (builtins.deepSeq broken 1)).success;
  brokenInList = (builtins.tryEval (builtins.deepSeq [ leaf [ (throw "y") ] ] 1)).success;
}
