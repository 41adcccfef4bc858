# expect: E037
# message-contains: toString
"prefix-" + ./lib/x.txt
