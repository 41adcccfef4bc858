# `${toString x}` is written into the string being built in place of the call:
# the same text as the call's for every kind of value, and a binding named
# `toString` is called, not taken for the builtin.
let
  set = { __toString = self: "set-${toString self.n}"; n = 7; };
  path = { outPath = "/out"; };
in
{
  kinds = "${toString 1}|${toString (-2)}|${toString 2.5}|${toString true}|${toString false}|${toString null}|${toString [ 1 [ ] "a" [ 2 3 ] null ]}|${builtins.toString set}|${toString path}|${toString "s"}";
  nested = "a${toString "b${toString 3}c"}d";
  shadowed = let toString = x: "mine"; in "${toString 1}";
  whole = builtins.substring 0 3 "abc";
  cut = builtins.substring 1 10 "abc";
  empty = builtins.substring 5 1 "abc";
  length = builtins.stringLength "${toString 12345}";
}
