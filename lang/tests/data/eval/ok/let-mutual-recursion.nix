let even = n: if n == 0 then true else odd (n - 1); odd = n: if n == 0 then false else even (n - 1); in [ (even 10) (odd 7) (even 3) ]
