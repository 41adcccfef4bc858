{ description = "a website"; }
