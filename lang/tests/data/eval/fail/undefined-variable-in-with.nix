# expect: E010
with { a = 1; }; b
