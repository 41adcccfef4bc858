builtins.trace "message to stderr" 42
