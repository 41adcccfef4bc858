let n = "b"; in { a.${n}.c = 1; }
