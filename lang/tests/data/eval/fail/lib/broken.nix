# a helper with a syntax error, imported by a fail case
{ a = 1 }
