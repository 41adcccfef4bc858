{ description = "a module in a directory that is not a repository"; }
