[ (baseNameOf ./.) (baseNameOf ./lib/.) (baseNameOf ./lib/../lib) (builtins.typeOf ./.) ]
