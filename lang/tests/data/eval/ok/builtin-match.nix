builtins.match "([a-z]+)-([0-9]+)" "abc-123"
