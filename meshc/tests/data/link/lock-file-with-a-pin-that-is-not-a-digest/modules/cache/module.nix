{ description = "a cache"; }
