# A set of plain data merged into a `rec` set is in that set's scope: its `true` or `null` is the set's, never deferred as the builtin's.
let y = 1; in { a = rec { null = 7; }; a.b.c = { x = null; pad = "some padding string to make it large enough for deferral"; }; }
