# max-steps: 10
# A chain of 51 `++` whose first operand throws stops there, within a budget of
# ten steps: the operators after it are not entered, as nested `++` never reach
# them (a chain that entered every operator first took 50 steps before the throw).
(builtins.tryEval ((throw "first") ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ] ++ [ ])).success
