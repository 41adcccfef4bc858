# expect: E002
''
  abc
