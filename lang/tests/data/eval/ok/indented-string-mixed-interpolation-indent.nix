let v = "V"; in ''
  ${v}
    ${v} x
''
