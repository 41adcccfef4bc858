# expect: E039
"n = ${1}"
