[ (builtins.sort (a: b: a < b) [ ]) (builtins.sort (a: b: throw "no") [ 1 ]) ]
