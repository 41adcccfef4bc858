# expect: E046
# max-memory: 10485760
# message-contains: evaluation would make more than 10 MiB of lists, sets and strings
# a list of a thousand strings, shared a thousand times: about 100 MiB of XML
let l = builtins.genList (x: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa") 1000; in builtins.stringLength (builtins.toXML (builtins.genList (x: l) 1000))
