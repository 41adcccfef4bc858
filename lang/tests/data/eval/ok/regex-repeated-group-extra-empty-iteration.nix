[ (builtins.match "(a*)+" "aa") (builtins.match "(((a*)){1,2}){0,}|.{2}" "aa") (builtins.split "((a*)?)+$" "bbaa") ]
