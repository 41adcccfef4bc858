# expect: E026
builtins.div 1 0
