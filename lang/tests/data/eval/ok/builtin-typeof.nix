map builtins.typeOf [ 1 1.0 "s" true null [ ] { } (x: x) builtins.map (builtins.map (x: x)) ./lib ]
