# notyetpassing: `==` compares two sets' attributes in alphabetical order; Nix 2.8 in the order of their symbols (`b` is created before `a` here), so Nix meets the catchable `throw` first and mesh the uncatchable missing attribute (E021)
builtins.tryEval ({ b = throw "x"; a = { }.x; } == { b = 1; a = 2; })
