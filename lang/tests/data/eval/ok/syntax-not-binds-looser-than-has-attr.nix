!{ a = true; } ? a
