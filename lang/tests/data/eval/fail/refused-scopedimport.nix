# expect: E036
scopedImport { } ./lib/x.txt
