''  first
  second
''
