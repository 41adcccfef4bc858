# hand-written: Nix 2.8 cuts substring's start and length to 32 bits (start 2^32 is 0, length 2^32 + 1 is 1, start 2^31 an error); mesh takes them as the 64-bit integers they are
[
  (builtins.substring 4294967296 1 "abc")
  (builtins.substring 0 4294967297 "abc")
  (builtins.substring 2147483648 1 "abc")
]
