"${"a"}${"b"}${toString 3}"
