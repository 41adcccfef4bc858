# expect: E037
{ p = ./lib/x.txt; }
