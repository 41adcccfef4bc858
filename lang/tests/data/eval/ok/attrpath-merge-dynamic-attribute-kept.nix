# hand-written: Nix 2.8 drops `b` when it merges two set literals bound to one name and the second has a dynamic attribute; later Nix keeps it, and so does mesh
{ s = { a = 1; }; s = { "${"b"}" = 2; }; }
