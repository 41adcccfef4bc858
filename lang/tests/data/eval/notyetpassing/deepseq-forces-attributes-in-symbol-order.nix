# notyetpassing: strict evaluation forces a set's attributes in alphabetical order; Nix 2.8 forces them in the order of their symbols (`b` is created before `a` here), so Nix meets the catchable `throw` first and mesh the uncatchable missing attribute (E021)
builtins.tryEval (builtins.deepSeq { b = throw "x"; a = { }.x; } 1)
