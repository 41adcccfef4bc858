''
  it's a 'quote'
''
