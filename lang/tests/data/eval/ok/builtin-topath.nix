baseNameOf (builtins.toPath "/a/b/../c")
