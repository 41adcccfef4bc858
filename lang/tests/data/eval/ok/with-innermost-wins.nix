with { a = "outer"; b = "b"; }; with { a = "inner"; }; [ a b ]
