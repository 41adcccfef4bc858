# expect: E037
# message-contains: toString
"${./lib/x.txt}"
