# A `with` takes its body off the spine (nothing under it is deferred: a name
# bound nowhere would be looked up in its namespace), and a `rec` set's values
# are never deferred: both evaluate as written.
let
  ns = { port = 80; name = "from with"; base = [ 1 2 3 ]; };
  name = "from let";
in
with ns;
{
  a = { x = port; y = name; z = base ++ [ 4 ]; w = "a longer string to pass the size"; };
  b = rec { p = port + 1; q = p * 2; r = "a longer string to pass the size, too"; };
  c = [ { v = name; w = base; u = "a longer string to pass the size, again"; } ];
}
