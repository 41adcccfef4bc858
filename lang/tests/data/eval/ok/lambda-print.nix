[ (x: x) ({ a }: a) builtins.map (builtins.map (x: x)) ]
