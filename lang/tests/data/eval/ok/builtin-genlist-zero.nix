builtins.genList (i: throw "no") 0
