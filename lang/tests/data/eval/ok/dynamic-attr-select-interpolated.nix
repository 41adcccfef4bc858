let s = { ab = 1; }; in s."a${"b"}"
