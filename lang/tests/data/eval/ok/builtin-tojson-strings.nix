builtins.toJSON [ "quote\"" "back\\" "nl\n" "tab\t" "uni é ✓" "$" ]
