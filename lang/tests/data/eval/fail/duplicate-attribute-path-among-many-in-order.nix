# expect: E008
# a duplicate found by a path into a value among more than eight names in name order
{ a1 = 1; a2 = 2; a3 = 3; a4 = 4; a5 = 5; a6 = 6; a7 = 7; a8 = 8; a9 = 9; a2.x = 10; }
