builtins.addErrorContext "context" 5
