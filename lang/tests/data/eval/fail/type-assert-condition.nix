# expect: E020
assert 1; 2
