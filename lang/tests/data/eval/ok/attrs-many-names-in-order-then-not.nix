# More than eight names: while they come in name order a name is found by a binary
# search, after one comes out of order by an index; paths merge into either.
let
  inOrder = { a1.x = 1; a2 = 2; a3 = 3; a4 = 4; a5 = 5; a6 = 6; a7 = 7; a8 = 8; a9 = 9; a1.y = 10; a5b.z = 11; a5b.w = 12; b = 13; };
  outOfOrder = { b1 = 1; b2 = 2; b3 = 3; b4 = 4; b5 = 5; b6 = 6; b7 = 7; b8 = 8; b9 = 9; a0.x = 10; b3x = 11; a0.y = 12; b10.c = 13; b10.d = 14; };
in [ inOrder outOfOrder (builtins.attrNames outOfOrder) inOrder.a1 outOfOrder.a0 ]
