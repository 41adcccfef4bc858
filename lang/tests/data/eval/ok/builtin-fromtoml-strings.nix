builtins.fromTOML "s = '''\nmulti\nline'''\nl = 'C:\\\\path'\nu = \"\\u00e9\\t\""
