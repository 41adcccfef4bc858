builtins.groupBy (x: if x > 2 then "big" else "small") [ 1 2 3 4 ]
