# expect: E036
# message-contains: derivation
derivation { name = "x"; builder = "/bin/sh"; system = "x86_64-linux"; }
