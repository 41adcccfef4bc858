# expect: E020
"a" - "b"
