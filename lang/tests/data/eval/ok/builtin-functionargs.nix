[ (builtins.functionArgs ({ a, b ? 1, ... }: a)) (builtins.functionArgs (x: x)) (builtins.functionArgs builtins.map) (builtins.functionArgs ({ }: 1)) ]
