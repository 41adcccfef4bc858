# expect: E046
# max-memory: 1048576
let
  separator = builtins.concatStringsSep "" (builtins.genList (x: "0123456789") 1000);
in
builtins.stringLength (builtins.concatStringsSep separator (builtins.genList (x: "") 1000))
