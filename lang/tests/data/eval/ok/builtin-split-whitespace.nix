builtins.split "[[:space:]]+" "  a  b c "
