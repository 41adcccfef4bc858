"""The nixpkgs module-system benchmark: `lib.evalModules` of nixpkgs' own `lib` over
MODULES generated modules, each declaring typed options (`mkOption` with
`types.bool`, `types.int`, `types.str`, `types.listOf`, `types.attrsOf`) and
defining config with `mkMerge`, `mkIf` (on its own option) and `mkDefault` (on its
neighbour's), the way NixOS modules do.

    nixpkgs_modules.py OUT NIXPKGS_LIB [MODULES]

Writes OUT/main.nix and OUT/modules/mNNNN.nix. NIXPKGS_LIB is a checkout of
https://github.com/nix-community/nixpkgs.lib (never committed here).
"""
import os
import sys


def module(index, count):
    return f"""{{ lib, config, ... }}:
let cfg = config.services.s{index}; in
{{
  options.services.s{index} = {{
    enable = lib.mkOption {{ type = lib.types.bool; default = false; description = "Whether to run s{index}."; }};
    port = lib.mkOption {{ type = lib.types.int; default = {8000 + index}; }};
    name = lib.mkOption {{ type = lib.types.str; default = "s{index}"; }};
    tags = lib.mkOption {{ type = lib.types.listOf lib.types.str; default = [ ]; }};
    env = lib.mkOption {{ type = lib.types.attrsOf lib.types.str; default = {{ }}; }};
  }};
  config = lib.mkMerge [
    {{ services.s{index}.tags = [ "t{index % 7}" ]; }}
    (lib.mkIf cfg.enable {{
      networking.ports = [ cfg.port ];
      services.s{index}.env.NAME = "${{cfg.name}}-${{toString cfg.port}}";
    }})
    {{ services.s{(index + 1) % count}.enable = lib.mkDefault {"true" if index % 2 == 0 else "false"}; }}
  ];
}}
"""


def main_source(library, count):
    modules = "\n    ".join(f"./modules/m{index:04d}.nix" for index in range(count))
    return f"""# lib.evalModules of nixpkgs' lib over {count} generated modules (see nixpkgs_modules.py)
let
  lib = import {library}/lib;
  base = {{ lib, ... }}: {{
    options.networking.ports = lib.mkOption {{ type = lib.types.listOf lib.types.int; default = [ ]; }};
  }};
  config = (lib.evalModules {{ modules = [ base ] ++ [
    {modules}
  ]; }}).config;
  names = builtins.attrNames config.services;
  enabled = builtins.filter (name: config.services.${{name}}.enable) names;
in
{{
  services = builtins.length names;
  enabled = builtins.length enabled;
  ports = builtins.foldl' (sum: port: sum + port) 0 config.networking.ports;
  tags = builtins.foldl' (sum: name: sum + builtins.length config.services.${{name}}.tags) 0 names;
  env = builtins.concatStringsSep "," (map (name: config.services.${{name}}.env.NAME) enabled);
}}
"""


def generate(out, library, count=2000):
    os.makedirs(os.path.join(out, "modules"), exist_ok=True)
    for index in range(count):
        with open(os.path.join(out, "modules", f"m{index:04d}.nix"), "w") as handle:
            handle.write(module(index, count))
    with open(os.path.join(out, "main.nix"), "w") as handle:
        handle.write(main_source(os.path.abspath(library), count))
    return os.path.join(out, "main.nix")


if __name__ == "__main__":
    generate(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 2000)
