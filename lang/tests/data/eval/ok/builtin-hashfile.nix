builtins.hashFile "sha256" ./lib/data.txt
