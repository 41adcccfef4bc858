let d = { type = "derivation"; drvPath = "/d"; outPath = "/o"; x = 1; }; in builtins.toXML [ d d { type = "derivation"; } ]
