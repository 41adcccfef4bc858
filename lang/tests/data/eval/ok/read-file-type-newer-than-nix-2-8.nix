# hand-written: `builtins.readFileType` is newer than Nix 2.8 (Nix 2.14); the values are what later Nix gives
map builtins.readFileType [ ./lib ./lib/data.txt ./lib/link-to-data.txt "${toString ./lib}/nested" ]
