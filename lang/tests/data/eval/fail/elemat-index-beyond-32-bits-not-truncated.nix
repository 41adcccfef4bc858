# expect: E032
# Nix 2.8 cuts elemAt's index to 32 bits and gives element 1 (4294967297 is 2^32 + 1);
# mesh takes it as the 64-bit integer it is, out of bounds
builtins.elemAt [ 1 2 3 ] 4294967297
