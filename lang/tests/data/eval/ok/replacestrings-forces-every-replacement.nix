# Nix 2.8 forces every replacement (and checks it is a string) before replacing,
# even one whose pattern never matches
[
  (builtins.tryEval (builtins.replaceStrings [ "a" ] [ (throw "x") ] "b"))
  (builtins.tryEval (builtins.replaceStrings [ "a" "b" ] [ "A" (throw "unused") ] "a"))
  (builtins.tryEval (builtins.replaceStrings [ ] [ ] (throw "subject")))
  (builtins.replaceStrings [ "a" "b" ] [ "A" "B" ] "ab")
]
