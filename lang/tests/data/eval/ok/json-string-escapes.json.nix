[ "quote\"" "back\\slash" "new\nline" "tab\t" "cr\r" "dollar $ \${x}" "slash /" ]
