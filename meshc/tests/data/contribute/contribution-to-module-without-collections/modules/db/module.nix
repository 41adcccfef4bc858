{ description = "a database"; }
