rec { s = { x = 1; }; inherit (s) x; }
