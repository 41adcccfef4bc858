[ (builtins.fromTOML "") (builtins.fromTOML "x = {a = 1, b = [ ]}") ]
