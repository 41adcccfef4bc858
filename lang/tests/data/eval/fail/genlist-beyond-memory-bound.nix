# expect: E046
# message-contains: evaluation would make more than 4 GiB of lists, sets and strings
builtins.length (builtins.genList (x: x) 1000000000)
