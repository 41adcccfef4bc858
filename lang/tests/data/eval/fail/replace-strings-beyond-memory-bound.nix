# expect: E046
# max-memory: 1048576
let
  long = builtins.concatStringsSep "" (builtins.genList (x: "0123456789") 1000);
  subject = builtins.concatStringsSep "" (builtins.genList (x: "a") 1000);
in
builtins.stringLength (builtins.replaceStrings [ "a" ] [ long ] subject)
