builtins.split "a*?" "baab"
