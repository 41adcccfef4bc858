{ a = 1; b = 1.5; c = "s"; d = null; e = true; f = [ 1 2 ]; g = false; }
