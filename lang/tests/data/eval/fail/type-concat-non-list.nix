# expect: E020
[ 1 ] ++ 1
