[ (toString 1) (baseNameOf "/a") (dirOf "/a/b") (isNull null) (removeAttrs { a = 1; } [ "a" ]) ]
