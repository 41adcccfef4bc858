[ (dirOf "/a/b/c") (dirOf "/a/b/") (dirOf "a") (dirOf "/") (dirOf "a/b") (dirOf "//a") (dirOf "") ]
