let s = { a = 1; }; in [ (s.a or 0) (s.b or 0) (s.a.b or "deep") ]
