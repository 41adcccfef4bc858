[ (builtins.bitAnd 12 10) (builtins.bitOr 12 10) (builtins.bitXor 12 10) (builtins.bitAnd (-1) 255) (builtins.bitXor (-1) 0) ]
