[ (baseNameOf "/a/b/c") (baseNameOf "/a/b/") (baseNameOf "c") (baseNameOf "") (baseNameOf "/") (baseNameOf "a//") ]
