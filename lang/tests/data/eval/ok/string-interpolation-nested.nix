let a = "A"; b = "B"; in "x${"y${a}z${"${b}"}"}w"
