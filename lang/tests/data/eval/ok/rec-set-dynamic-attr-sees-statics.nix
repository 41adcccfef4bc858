rec { x = "name"; ${x} = 1; }
