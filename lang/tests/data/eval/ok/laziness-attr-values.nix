let s = { ok = 1; bad = abort "no"; }; in s.ok
