builtins.zipAttrsWith (name: values: { inherit name values; }) [ { a = 1; b = 2; } { a = 3; } { c = 4; b = 5; } ]
