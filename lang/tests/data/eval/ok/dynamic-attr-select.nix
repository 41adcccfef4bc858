let s = { foo = { bar = 42; }; }; n = "bar"; in s.foo.${n}
