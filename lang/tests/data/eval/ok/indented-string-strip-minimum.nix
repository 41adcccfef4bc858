''
    four
  two
      six
''
