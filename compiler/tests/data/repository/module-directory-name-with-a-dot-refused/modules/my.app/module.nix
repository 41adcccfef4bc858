{ description = "an app"; }
