# expect: E036
builtins.fetchGit { url = "https://example.org/a.git"; }
