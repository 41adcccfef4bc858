# expect: E001
[ / ]
