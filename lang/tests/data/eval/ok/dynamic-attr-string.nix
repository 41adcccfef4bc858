let n = "key"; in { ${n} = 1; "${n}2" = 2; }
