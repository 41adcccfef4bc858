let name = "mesh"; n = "7"; in "hello ${name}, ${n} times"
