"abc" + "def" + "" + "g"
