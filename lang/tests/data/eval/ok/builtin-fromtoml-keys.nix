builtins.fromTOML "\"quoted key\" = 1\nbare.dotted = 2\n[a.b]\nc = 3\n[a]\nd = 4"
