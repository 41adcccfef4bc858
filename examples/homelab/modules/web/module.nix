# web: a static site served by Python's HTTP server. It opens its port through
# `networking`, and offers itself to `proxy` wherever that also runs.
{ mesh, ... }:
{
  description = "A static website served on one port";
  requires = [ "networking" ];

  settings = {
    port = mesh.option { type = mesh.types.port; default = 8080; description = "TCP port the site listens on"; };
    title = mesh.option { type = mesh.types.str; default = "mesh"; description = "Title of the page"; };
  };

  contributes = { node, settings, ... }: {
    networking.ports = [ settings.port ];
    proxy.sites."${node.name}.example.org".upstreams = [ "${node.address}:${toString settings.port}" ];
  };

  shapes = { settings, ... }: [
    (mesh.user { name = "web"; home = "/srv/web"; })
    (mesh.directory { path = "/srv/web"; owner = "web"; group = "web"; })
    (mesh.file {
      path = "/srv/web/index.html";
      owner = "web";
      group = "web";
      content = ''
        <!doctype html>
        <title>${settings.title}</title>
        <h1>${settings.title}</h1>
      '';
    })
    (mesh.service {
      name = "web";
      user = "web";
      exec = [ "/usr/bin/python3" "-m" "http.server" (toString settings.port) "--directory" "/srv/web" ];
      after = [ "network-online.target" ];
    })
  ];
}
