# expect: E029
# message-contains: while checking the port
# message-contains: port out of range
let check = port: builtins.addErrorContext "while checking the port" (if port > 65535 then throw "port out of range" else port); in check 70000
