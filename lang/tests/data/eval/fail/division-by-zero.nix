# expect: E026
1 / 0
