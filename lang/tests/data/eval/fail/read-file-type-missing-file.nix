# expect: E035
# message-contains: no such file or directory
builtins.readFileType ./lib/there-is-no-such-file
