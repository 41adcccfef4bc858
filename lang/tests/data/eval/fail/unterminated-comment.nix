# expect: E003
1 /* never closed
