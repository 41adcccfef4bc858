[ { or = 5; }.or { a.b = 1; }.a.b or 2 ]
