# a literal bound by `let` or passed to a function shares what it holds as Nix does
let a = [ 1 2 ]; b = [ 1 2 3 ]; s = { inherit a b; c = [ a a b b ]; }; f = x: [ x.a x.a x.b x.b x.c ]; in [ (f s) (f { inherit a b; c = [ a ]; }) s ]
