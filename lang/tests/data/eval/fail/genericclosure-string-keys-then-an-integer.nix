# expect: E038
# Keys of one kind (strings) seen, then an integer: comparing it with them is an
# error, as when the first key was an integer and a string came after it.
builtins.genericClosure { startSet = [ { key = "a"; } { key = "b"; } { key = 1; } ]; operator = x: [ ]; }
