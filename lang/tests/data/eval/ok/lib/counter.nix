# evaluated once per import of the same path
{ value = builtins.length [ 1 2 ]; }
