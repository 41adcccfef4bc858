# A set of plain data merged into a `rec` set is in that set's scope: its `true` or `null` is the set's, never deferred as the builtin's.
let y = 1; in {
  a = rec { true = "shadowed"; };
  a.b = { x = true; pad = "some padding string to make it large enough for deferral"; more = [ 1 2 3 4 5 ]; };
}
