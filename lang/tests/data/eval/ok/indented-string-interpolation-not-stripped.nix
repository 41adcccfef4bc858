let x = "  a\n    b"; in ''
    ${x}
    c
''
