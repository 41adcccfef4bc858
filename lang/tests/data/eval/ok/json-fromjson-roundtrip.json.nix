builtins.fromJSON (builtins.readFile ./lib/data.json)
