builtins.toXML { c = x: x; d = { p, q ? 1, ... }@args: p; e = { }: 1; f = builtins.map; g = { b, a }: a; }
