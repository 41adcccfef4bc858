builtins.toXML [ 1 1.5 "s" true false null /a/b [ ] ]
