''
  # not a comment
  /* neither */
''
