# shop: a web application with its own PostgreSQL login. The compiler places the
# credential at `path` on this node and grants the login on the provider's node.
{ mesh, ... }:
{
  description = "The shop application, with a login on the fleet's PostgreSQL";
  requires = [ "networking" ];

  settings = {
    database = mesh.option {
      type = mesh.types.nullOr mesh.types.node;
      default = null;
      description = "The node whose PostgreSQL the shop uses; null when exactly one node provides it";
    };
    port = mesh.option { type = mesh.types.port; default = 8000; description = "TCP port of the shop"; };
  };

  consumes = { settings, ... }: {
    db = {
      service = "postgres";
      from = settings.database;
      path = "/var/lib/mesh/credentials/shop-db";
      owner = "shop";
    };
  };

  contributes = { settings, ... }: { networking.ports = [ settings.port ]; };

  shapes = { settings, ... }: [
    (mesh.user { name = "shop"; home = "/srv/shop"; })
    (mesh.directory { path = "/srv/shop"; owner = "shop"; group = "shop"; })
    (mesh.directory { path = "/var/lib/mesh"; })
    (mesh.directory { path = "/var/lib/mesh/credentials"; mode = "0711"; })
    (mesh.service {
      name = "shop";
      user = "shop";
      exec = [ "/srv/shop/bin/shop" "--port" (toString settings.port) ];
      environment = { DATABASE_PASSWORD_FILE = "/var/lib/mesh/credentials/shop-db"; };
      after = [ "network-online.target" ];
    })
  ];
}
