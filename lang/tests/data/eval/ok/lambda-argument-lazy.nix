(x: 1) (throw "never")
