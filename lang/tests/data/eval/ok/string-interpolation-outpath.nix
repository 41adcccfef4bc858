let d = { outPath = "/some/where"; }; in "at ${d}"
