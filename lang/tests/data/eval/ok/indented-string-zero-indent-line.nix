''
  a
b
  c
''
