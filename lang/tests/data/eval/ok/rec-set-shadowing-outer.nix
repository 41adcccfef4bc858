let x = 1; in rec { x = 2; y = x; }
