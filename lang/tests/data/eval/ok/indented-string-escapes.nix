''
  dollar ''${x}
  quotes '''
  newline ''\n tab ''\t backslash ''\\
  other ''\q
''
