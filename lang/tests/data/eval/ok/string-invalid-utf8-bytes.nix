# a comment with invalid UTF-8: ÿþ
[ "bytes Ã( ÿ" (builtins.stringLength "ÿþ") ]
