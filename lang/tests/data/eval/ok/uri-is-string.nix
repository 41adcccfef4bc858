builtins.typeOf http://example.org
