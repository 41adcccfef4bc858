builtins.fromJSON "\"\\u00e9\\u2713 \\ud83d\\ude00 \\n\\t\\/\""
