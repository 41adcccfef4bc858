let b = { x = builtins.length; }; in [ b b ]
