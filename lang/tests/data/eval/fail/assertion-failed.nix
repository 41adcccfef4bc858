# expect: E031
assert 1 == 2; 3
