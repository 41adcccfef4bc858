# expect: E036
builtins.filterSource (p: t: true) ./lib
