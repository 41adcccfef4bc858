# expect: E005
./lib/
