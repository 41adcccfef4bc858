with { true = false; map = 1; }; [ true (map (x: x) [ 1 ]) ]
