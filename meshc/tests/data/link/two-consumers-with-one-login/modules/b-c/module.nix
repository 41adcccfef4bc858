{ description = "one app"; consumes.db = { service = "kv"; path = "/etc/one-db"; }; }
