builtins.split "x*?(a)*?(ab|a){0,}" "babaab"
