builtins.hashFile "md5" ./lib/empty.txt
