builtins.fromTOML "a = 1\nb = \"s\"\n[t]\nx = [1, 2.5, true]\n[[arr]]\ny = 1\n[[arr]]\ny = 2"
