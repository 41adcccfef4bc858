let k = "a"; in { "${k}" = { x = 1; }; }
