# A program that binds __sub, __mul or __lessThan has -x, a - b, a * b and a < b call
# its bindings; a value using them that is lowered when first read is lowered in
# the scopes that bind them.
let __sub = a: b: a + b; __mul = a: b: "mul"; __lessThan = a: b: "lt"; in
{ e = [ (-3) (5 - 1) (2 * 3) (1 < 2) "a string long enough to be deferred" ]; }
