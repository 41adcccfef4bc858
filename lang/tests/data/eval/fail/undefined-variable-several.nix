# expect: E010
# error-count: 2
[ missing1 missing2 ]
