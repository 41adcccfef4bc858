# expect: E004
[ 1.0 4.9e-324 ]
