# notyetpassing: libstdc++ (Nix 2.8's std::regex) enters a repeated group once more at the same position when the group can match the empty string, so `(a*)+` on "aa" captures "" where the regex crate captures "aa"; matching this needs a port of libstdc++'s backtracking executor
[ (builtins.match "(a*)+" "aa") (builtins.match "(((a*)){1,2}){0,}|.{2}" "aa") (builtins.split "((a*)?)+$" "bbaa") ]
