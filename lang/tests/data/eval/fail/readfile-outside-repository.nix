# expect: E034
builtins.readFile /etc/hostname
