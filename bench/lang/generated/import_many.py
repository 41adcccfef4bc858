"""The import benchmark: a program that imports FILES small generated files, each a
function of a shared `common.nix` returning a record, as a repository of many small
modules is read.

    import_many.py OUT [FILES]

Writes OUT/main.nix, OUT/common.nix and OUT/parts/pNNNN.nix.
"""
import os
import sys

COMMON = """{
  domain = "mesh.internal";
  base = 10000;
  label = name: "part-${name}";
}
"""


def part(index):
    return f"""{{ common }}:
let name = "p{index:04d}"; in
{{
  inherit name;
  port = common.base + {index};
  host = "${{name}}.${{common.domain}}";
  label = common.label name;
  tags = [ "group{index % 13}" "zone{index % 3}" ];
  limits = {{ memory = {index * 16}; files = 4096; }};
}}
"""


def main_source(count):
    parts = "\n    ".join(f"./parts/p{index:04d}.nix" for index in range(count))
    return f"""# `import` of {count} small files (see import_many.py)
let
  common = import ./common.nix;
  parts = map (file: import file {{ inherit common; }}) [
    {parts}
  ];
in
{{
  count = builtins.length parts;
  ports = builtins.foldl' (sum: part: sum + part.port + part.limits.memory) 0 parts;
  hosts = builtins.foldl' (sum: part: sum + builtins.stringLength (part.host + part.label)) 0 parts;
  last = builtins.elemAt parts {count - 1};
}}
"""


def generate(out, count=5000):
    os.makedirs(os.path.join(out, "parts"), exist_ok=True)
    with open(os.path.join(out, "common.nix"), "w") as handle:
        handle.write(COMMON)
    for index in range(count):
        with open(os.path.join(out, "parts", f"p{index:04d}.nix"), "w") as handle:
            handle.write(part(index))
    with open(os.path.join(out, "main.nix"), "w") as handle:
        handle.write(main_source(count))
    return os.path.join(out, "main.nix")


if __name__ == "__main__":
    generate(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5000)
