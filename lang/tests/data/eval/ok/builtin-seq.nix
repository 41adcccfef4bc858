builtins.seq 1 "second"
