# expect: E001
# a path goes on past a `/` only into an interpolation: `./a//b` is a syntax error in Nix
[ ./a/b ./a//b ]
