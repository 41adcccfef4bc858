#!/usr/bin/env python3
"""Generates a deterministic synthetic fleet: N nodes, M modules.

    generate.py NODES OUT [--modules M] [--heavy] [--code]

Writes OUT/mesh (a mesh repository for `meshc build`) and OUT/nix (the same modules
and inventory evaluated by a plain-Nix module system, `nix-instantiate --eval
--strict OUT/nix/fleet.nix`), so both evaluate the same module files. `--heavy` writes modules as heavy as real
ones (heavy.py: interpolation, sort, genList, collections; about 130 shapes a node)
instead of the light ones (four shapes a module, about 40 a node). `--code` writes
the inventory as operators write one, with a `let` of shared values that every entry
names, instead of as plain data.
"""
import hashlib
import os
import shutil
import sys

from heavy import heavy_module_source

CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def bech32_polymod(values):
    generator = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
    checksum = 1
    for value in values:
        top = checksum >> 25
        checksum = (checksum & 0x1FFFFFF) << 5 ^ value
        for index in range(5):
            checksum ^= generator[index] if ((top >> index) & 1) else 0
    return checksum


def recipient(seed):
    """A valid-looking age X25519 recipient derived from `seed` (bech32 with checksum)."""
    data = hashlib.sha256(seed.encode()).digest()
    bits, accumulator, words = 0, 0, []
    for byte in data:
        accumulator = (accumulator << 8) | byte
        bits += 8
        while bits >= 5:
            bits -= 5
            words.append((accumulator >> bits) & 31)
    if bits:
        words.append((accumulator << (5 - bits)) & 31)
    hrp = "age"
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    polymod = bech32_polymod(expanded + words + [0] * 6) ^ 1
    checksum = [(polymod >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(CHARSET[w] for w in words + checksum)


def module_source(index, count):
    name = f"m{index:02d}"
    requires = ['"networking"']
    if index % 5 == 0 and index + 1 < count:
        requires.append(f'"m{index + 1:02d}"')
    return f"""{{ mesh, ... }}:
{{
  description = "synthetic module {index}";
  requires = [ {" ".join(requires)} ];
  settings = {{
    port = mesh.option {{ type = mesh.types.port; default = {10000 + index}; description = "listening port"; }};
    replicas = mesh.option {{ type = mesh.types.int; default = 1; description = "worker count"; }};
    label = mesh.option {{ type = mesh.types.str; default = "{name}"; description = "a label"; }};
    features = mesh.option {{ type = mesh.types.listOf mesh.types.str; default = [ "a" "b" ]; description = "enabled features"; }};
  }};
  contributes = {{ settings, ... }}: {{ networking.ports = [ settings.port ]; }};
  shapes = {{ node, settings, ... }}: [
    (mesh.user {{ name = "{name}"; home = "/var/lib/{name}"; }})
    (mesh.directory {{ path = "/var/lib/{name}"; owner = "{name}"; group = "{name}"; mode = "0750"; }})
    (mesh.file {{
      path = "/var/lib/{name}/config.json";
      owner = "{name}";
      group = "{name}";
      content = builtins.toJSON {{ inherit (settings) port replicas label features; node = node.name; }};
    }})
    (mesh.service {{
      name = "{name}";
      user = "{name}";
      exec = [ "/usr/bin/{name}" "--port" (toString settings.port) "--workers" (toString settings.replicas) ];
      environment = {{ NODE = node.name; LABEL = settings.label; }};
    }})
  ];
}}
"""


def node_modules(node_index, module_count):
    picked = []
    for k in range(5 + node_index % 6):
        candidate = (node_index * 7 + k * 3) % module_count
        if candidate not in picked:
            picked.append(candidate)
    return sorted(picked)


def inventory(nodes, module_count, code=False):
    if code:
        # as operators write one: shared values bound by a `let`, named by every entry
        lines = [
            "let",
            '  registry = "registry.mesh.internal:5000";',
            "  # the modules every node runs beside its own",
            "  base = [ ];",
            "in",
            "{",
            "  inherit registry;",
            "  nodes = {",
        ]
    else:
        lines = ["{", '  registry = "registry.mesh.internal:5000";', "  nodes = {"]
    for node_index in range(nodes):
        name = f"node{node_index:05d}"
        modules = " ".join(f'"m{m:02d}"' for m in node_modules(node_index, module_count))
        lines.append(f"    {name} = {{")
        lines.append(f'      key = "{recipient(name)}";')
        lines.append(f'      address = "10.{node_index // 65536 % 256}.{node_index // 256 % 256}.{node_index % 256}";')
        lines.append(f"      modules = {'base ++ ' if code else ''}[ {modules} ];")
        if node_index % 3 == 0:
            first = node_modules(node_index, module_count)[0]
            lines.append(f"      settings.m{first:02d}.replicas = {node_index % 4 + 1};")
        lines.append("    };")
    lines.append("  };")
    lines.append("}")
    return "\n".join(lines) + "\n"


PRELUDE = r"""# The mesh prelude in plain Nix, for the benchmark's Nix side: the same constructors
# without the checks meshc makes.
let
  type = name: extra: { _type = "mesh-type"; inherit name; } // extra;
in
{
  option = args: args // { _type = "mesh-option"; };
  types = {
    bool = type "bool" { }; int = type "int" { }; str = type "str" { }; port = type "port" { };
    path = type "path" { }; any = type "any" { };
    listOf = element: type "listOf" { inherit element; };
    attrsOf = element: type "attrsOf" { inherit element; };
    nullOr = element: type "nullOr" { inherit element; };
  };
  user = args: { kind = "user"; system = true; home = null; shell = null; groups = [ ]; } // args;
  directory = args: { kind = "directory"; owner = "root"; group = "root"; mode = "0755"; } // args;
  file = args: { kind = "file"; owner = "root"; group = "root"; mode = "0644"; } // args;
  link = args: { kind = "link"; } // args;
  service = args: { kind = "service"; user = "root"; environment = { }; after = [ ]; restart = "on-failure"; } // args;
}
"""

FLEET = r"""# A plain-Nix module system over the same modules and inventory: resolve requires,
# apply settings, collect contributions, produce each node's shapes.
let
  inventory = import ./mesh.nix;
  mesh = import ./prelude.nix;
  names = builtins.attrNames (builtins.readDir ./modules);
  modules = builtins.listToAttrs (map (name: {
    inherit name;
    value = import (./modules + "/${name}/module.nix") { inherit mesh; };
  }) names);
  call = field: args: if builtins.isFunction field then field args else field;
  settingsOf = node: name:
    let overrides = (node.settings or { }).${name} or { };
    in builtins.mapAttrs (key: option: overrides.${key} or option.default) (modules.${name}.settings or { });
  build = nodeName: entry:
    let
      node = entry // { name = nodeName; };
      resolved = map (item: item.key) (builtins.genericClosure {
        startSet = map (name: { key = name; }) node.modules;
        operator = item: map (name: { key = name; })
          (call (modules.${item.key}.requires or [ ]) { inherit node; settings = settingsOf node item.key; });
      });
      settings = builtins.listToAttrs (map (name: { inherit name; value = settingsOf node name; }) resolved);
      contributions = map (name: call (modules.${name}.contributes or { }) { inherit node; settings = settings.${name}; }) resolved;
      collectedFor = name:
        builtins.mapAttrs (collection: _:
          builtins.concatLists (map (c: (c.${name} or { }).${collection} or [ ]) contributions))
          (modules.${name}.collects or { });
    in
    builtins.concatMap (name: call (modules.${name}.shapes or [ ]) {
      inherit node;
      settings = settings.${name};
      collected = collectedFor name;
    }) resolved;
in
builtins.mapAttrs build inventory.nodes
"""


def main():
    nodes = int(sys.argv[1])
    out = sys.argv[2]
    module_count = 30
    if "--modules" in sys.argv:
        module_count = int(sys.argv[sys.argv.index("--modules") + 1])
    source = heavy_module_source if "--heavy" in sys.argv else module_source
    here = os.path.dirname(os.path.abspath(__file__))
    networking = os.path.join(here, "..", "..", "stdlib-modules", "networking", "module.nix")
    shutil.rmtree(out, ignore_errors=True)
    for side in ("mesh", "nix"):
        for index in range(module_count):
            directory = os.path.join(out, side, "modules", f"m{index:02d}")
            os.makedirs(directory)
            with open(os.path.join(directory, "module.nix"), "w") as handle:
                handle.write(source(index, module_count))
        with open(os.path.join(out, side, "mesh.nix"), "w") as handle:
            handle.write(inventory(nodes, module_count, "--code" in sys.argv))
    os.makedirs(os.path.join(out, "nix", "modules", "networking"))
    shutil.copy(networking, os.path.join(out, "nix", "modules", "networking", "module.nix"))
    with open(os.path.join(out, "nix", "prelude.nix"), "w") as handle:
        handle.write(PRELUDE)
    with open(os.path.join(out, "nix", "fleet.nix"), "w") as handle:
        handle.write(FLEET)


if __name__ == "__main__":
    main()
