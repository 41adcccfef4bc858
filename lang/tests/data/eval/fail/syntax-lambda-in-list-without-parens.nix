# expect: E001
[ a: a ]
