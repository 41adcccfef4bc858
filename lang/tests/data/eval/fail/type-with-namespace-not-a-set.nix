# expect: E020
with 1; x
