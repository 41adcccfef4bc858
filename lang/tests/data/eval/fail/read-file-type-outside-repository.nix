# expect: E034
builtins.readFileType /etc/passwd
