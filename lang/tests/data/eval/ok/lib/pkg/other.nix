"relative import from a directory"
