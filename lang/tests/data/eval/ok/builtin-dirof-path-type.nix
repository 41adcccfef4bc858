let d = dirOf ./lib/data.txt; in [ (builtins.typeOf d) (baseNameOf d) ]
