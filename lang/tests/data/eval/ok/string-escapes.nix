"tab\tnew\nline\rcr quote\" backslash\\ dollar\$ other\q"
