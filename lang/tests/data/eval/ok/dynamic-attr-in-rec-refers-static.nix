rec { n = "z"; ${n} = n; }
