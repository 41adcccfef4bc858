builtins.fromJSON "  \n [ 1 ,\t2 ] \n "
