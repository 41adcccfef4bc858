let a = "outer"; in rec { inherit a; b = a; }
