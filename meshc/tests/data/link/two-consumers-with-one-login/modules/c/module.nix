{ description = "another app"; consumes.db = { service = "kv"; path = "/etc/other-db"; }; }
