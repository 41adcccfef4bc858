builtins.partition (x: true) [ ]
