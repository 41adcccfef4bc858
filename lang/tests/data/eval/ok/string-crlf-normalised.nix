"a
bc"
