let a = "lexical"; in with { a = "with"; }; a
