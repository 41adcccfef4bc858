let d = { z = 1; }; in [ ({ }.a or d) d ]
