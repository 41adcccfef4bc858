# expect: E039
# message-contains: cannot turn an integer into a string
builtins.tryEval (builtins.addErrorContext 1 (throw "x"))
