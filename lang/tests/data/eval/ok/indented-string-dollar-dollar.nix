let x = "X"; in ''
  $${x}
''
