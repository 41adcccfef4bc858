# the set is made before the list selects from it: each selection is still a copy
let s = { x = [ 1 2 ]; y = [ 3 ]; }; in builtins.seq s [ s.x s.x s.y s.y ]
