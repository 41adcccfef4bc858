builtins.genList (i: { i = i; s = toString i; }) 20
