# hand-written: Nix 2.8 refuses to read a file holding a NUL byte ("cannot be represented as a Nix string"); mesh strings are byte strings and keep it
let s = builtins.readFile ./lib/with-nul.bin; in [ (builtins.stringLength s) (builtins.substring 2 1 s) ]
