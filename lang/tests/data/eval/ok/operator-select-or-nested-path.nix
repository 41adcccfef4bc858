{ a.b.c = 1; }.a.b.d or "default"
