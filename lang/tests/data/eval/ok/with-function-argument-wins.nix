(x: with { x = "with"; }; x) "argument"
