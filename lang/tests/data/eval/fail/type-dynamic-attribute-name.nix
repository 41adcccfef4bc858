# expect: E020
{ ${1} = 2; }
