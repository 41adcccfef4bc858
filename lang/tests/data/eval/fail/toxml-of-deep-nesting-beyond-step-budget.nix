# expect: E043
# max-steps: 50000
# two thousand nested lists take a few thousand calls, but their indentation is
# 8 MB of XML: a step per 64 bytes written
let f = n: if n == 0 then [ ] else [ (f (n - 1)) ]; in builtins.stringLength (builtins.toXML (f 2000))
