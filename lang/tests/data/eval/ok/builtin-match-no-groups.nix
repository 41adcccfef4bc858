builtins.match "[0-9]+" "123"
