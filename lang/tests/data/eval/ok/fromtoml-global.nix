fromTOML ''
  a = 1
  [b]
  c = "x"
''
