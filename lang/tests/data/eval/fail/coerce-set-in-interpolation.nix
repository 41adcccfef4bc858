# expect: E039
"${{ a = 1; }}"
