# A value on a file's spine written in 64 bytes or more that is a variable is not
# deferred: it shares the variable's value, so a list prints as «repeated».
let l = [ 1 2 ]; in { a = l; b = ( /* a comment that is long enough to pass sixty-four bytes */ l ); }
