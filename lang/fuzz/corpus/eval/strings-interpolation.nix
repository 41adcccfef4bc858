let n = 42; s = "x${toString n}y"; in { a = "${s}-${"nested ${s}"}"; b = ''
  indented '${s}'
    more $${n} ''${n} '''
''; c = builtins.concatStringsSep "," (map toString [ 1 2.5 null true [ 1 [ ] 2 ] ]); d = "esc\n\t\"\\\${}"; }