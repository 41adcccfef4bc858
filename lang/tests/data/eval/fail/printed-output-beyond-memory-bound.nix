# expect: E046
# max-memory: 10485760
# message-contains: evaluation would make more than 10 MiB of lists, sets and strings
# a 128 KiB string, made within the bound, printed 200 times: 26 MB of output
let
  double = s: s + s;
  s = double (double (double (double (double (double (double (double (double (double (double (double (double (double (double (double (double "a"))))))))))))))));
in
builtins.genList (x: s) 200
