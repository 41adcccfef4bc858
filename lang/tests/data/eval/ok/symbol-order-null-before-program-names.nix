# `null` is a symbol Nix makes at start-up, before any name of the program: a `rec` set fills its slot first, and `q` shares the list.
rec { q = null; null = [ 1 ]; }
