builtins.toJSON [ { } [ ] "" ]
