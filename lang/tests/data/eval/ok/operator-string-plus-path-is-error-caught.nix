builtins.typeOf ("a" + "b")
