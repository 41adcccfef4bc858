(builtins.tryEval { a = throw "inner"; }).success
