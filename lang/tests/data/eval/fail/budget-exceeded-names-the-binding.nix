# expect: E043
# max-steps: 100000
# message-contains: evaluation took more than 100000 steps while evaluating `runaway`
let
  fib = n: if n < 2 then n else fib (n - 1) + fib (n - 2);
  runaway = fib 40;
in
runaway
