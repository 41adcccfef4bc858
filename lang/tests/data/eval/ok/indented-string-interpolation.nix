let x = "X"; in ''
  a ${x} b
    ${x}
''
