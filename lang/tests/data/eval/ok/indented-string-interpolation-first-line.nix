let x = "v"; in ''${x}
    a
  b
''
