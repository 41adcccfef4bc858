[ __curPos.line __curPos.column
  (let f = x: __curPos; in [ (f 1).line (f 1).column ])
  (builtins.attrNames __curPos)
  (let __curPos = 5; in __curPos.line)
]
