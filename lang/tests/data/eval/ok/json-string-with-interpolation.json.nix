let n = 3; in { msg = "n is ${toString n}"; }
