"""The heavy fleet's module source (`generate.py --heavy`): modules that do what real
ones do. Each renders a configuration file per worker with string interpolation,
sorts its features and the endpoints it collects from another module
(`concatStringsSep`), makes its workers with `genList` and `concatMap`, builds its
services with a helper that has formals and defaults, and contributes to
`networking.ports` and to the module three on (the one a node usually runs too)'s `endpoints` collection. With 4 or 5
workers a module makes 15 or 18 shapes: about 130 a node with the networking ones.
"""


def heavy_module_source(index, count):
    name = f"m{index:02d}"
    successor = f"m{(index + 3) % count:02d}"
    requires = ['"networking"']
    if index % 5 == 0 and index + 1 < count:
        requires.append(f'"m{index + 1:02d}"')
    workers = 4 + index % 2
    return f"""{{ mesh, ... }}:
let
  name = "{name}";
  home = "/var/lib/${{name}}";
  render = {{ node, settings, worker, peers }}: ''
    # ${{name}} worker ${{toString worker}} on ${{node.name}}
    listen = ${{node.address}}:${{toString (settings.port + worker)}}
    label = ${{settings.label}}-${{toString worker}}
    replicas = ${{toString settings.replicas}}
    features = ${{builtins.concatStringsSep "," (builtins.sort builtins.lessThan settings.features)}}
    peers = ${{builtins.concatStringsSep " " peers}}
  '';
  unit = {{ worker, settings, after ? [ "network.target" ], restart ? "on-failure", extraEnvironment ? {{ }} }}:
    mesh.service {{
      name = "${{name}}-w${{toString worker}}";
      user = name;
      exec = [ "/usr/bin/${{name}}" "--config" "${{home}}/w${{toString worker}}/config" "--port" (toString (settings.port + worker)) ];
      environment = {{ LABEL = settings.label; WORKER = toString worker; }} // extraEnvironment;
      inherit after restart;
    }};
in
{{
  description = "synthetic heavy module {index}";
  requires = [ {" ".join(requires)} ];
  settings = {{
    port = mesh.option {{ type = mesh.types.port; default = {10000 + index * 10}; description = "first listening port"; }};
    replicas = mesh.option {{ type = mesh.types.int; default = 1; description = "replica count"; }};
    workers = mesh.option {{ type = mesh.types.int; default = {workers}; description = "worker count"; }};
    label = mesh.option {{ type = mesh.types.str; default = name; description = "a label"; }};
    features = mesh.option {{ type = mesh.types.listOf mesh.types.str; default = [ "zeta" "alpha" "mu" "beta{index}" ]; description = "enabled features"; }};
  }};
  collects.endpoints = mesh.types.listOf mesh.types.str;
  contributes = {{ node, settings, ... }}: {{
    networking.ports = builtins.genList (worker: settings.port + worker) settings.workers;
    {successor}.endpoints = map (worker: "${{node.name}}/${{name}}:${{toString (settings.port + worker)}}") (builtins.genList (w: w) settings.workers);
  }};
  shapes = {{ node, settings, collected, ... }}:
    let
      workers = builtins.genList (worker: worker) settings.workers;
      peers = builtins.sort builtins.lessThan collected.endpoints;
    in
    [
      (mesh.user {{ inherit name home; }})
      (mesh.directory {{ path = home; owner = name; group = name; mode = "0750"; }})
      (mesh.file {{
        path = "${{home}}/peers";
        owner = name;
        group = name;
        content = builtins.concatStringsSep "\\n" ([ "# peers of ${{name}} on ${{node.name}}" ] ++ peers) + "\\n";
      }})
    ]
    ++ builtins.concatMap (worker: [
      (mesh.directory {{ path = "${{home}}/w${{toString worker}}"; owner = name; group = name; }})
      (mesh.file {{
        path = "${{home}}/w${{toString worker}}/config";
        owner = name;
        group = name;
        mode = "0640";
        content = render {{ inherit node settings worker peers; }};
      }})
      (if worker == 0
        then unit {{ inherit worker settings; extraEnvironment = {{ PRIMARY = "1"; NODE = node.name; }}; }}
        else unit {{ inherit worker settings; after = [ "network.target" "${{name}}-w0.service" ]; }})
    ]) workers;
}}
"""
