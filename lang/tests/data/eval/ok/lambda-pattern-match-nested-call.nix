let f = { x, y ? x }: { inherit x y; }; in [ (f { x = 1; }) (f { x = 1; y = 2; }) ]
