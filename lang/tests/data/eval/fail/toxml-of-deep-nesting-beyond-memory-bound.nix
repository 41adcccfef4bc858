# expect: E046
# max-memory: 1048576
# message-contains: evaluation would make more than 1 MiB of lists, sets and strings
# two thousand nested lists: their indentation alone is 8 MB of XML
let f = n: if n == 0 then [ ] else [ (f (n - 1)) ]; in builtins.stringLength (builtins.toXML (f 2000))
