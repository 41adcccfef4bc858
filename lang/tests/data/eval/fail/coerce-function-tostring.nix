# expect: E039
toString (x: x)
