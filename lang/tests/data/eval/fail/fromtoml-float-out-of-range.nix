# expect: E041
# Nix 2.8 clamps a TOML float beyond the float range to the largest float
# ({ a = 1.79769e+308; }); mesh refuses it, as it refuses such an integer
builtins.fromTOML "a = 1e400"
