"line one
line two
  indented"
