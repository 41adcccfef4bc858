''
  hello
  world
''
