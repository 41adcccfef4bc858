# expect: E010
0x10
