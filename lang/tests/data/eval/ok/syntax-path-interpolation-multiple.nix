let a = "lib"; b = "data"; in builtins.readFile ./${a}/${b}.txt
