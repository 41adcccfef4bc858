[ 1 "two" 3.0 null true { a = 1; } [ ] (x: x) ]
