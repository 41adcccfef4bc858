[ (builtins.hashString "md5" "hello") (builtins.hashString "sha1" "hello") (builtins.hashString "sha256" "hello") (builtins.hashString "sha512" "") ]
