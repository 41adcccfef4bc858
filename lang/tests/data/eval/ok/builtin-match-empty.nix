[ (builtins.match "" "") (builtins.match "" "a") ]
