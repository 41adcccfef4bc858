# expect: E001
# an absolute path with `///` is a syntax error in Nix too
/a///b
