{ a = { b = { c = "deep"; }; }; }.a.b.c
