# shop: a web application with its own PostgreSQL login. The compiler places the
# credential at `path` on this node and grants the login on the provider's node;
# `logins.db` says where to connect (the provider's address and the port, database
# and sslmode it publishes as facts) and as whom, so nothing here is hard-coded.
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

  shapes = { settings, logins, ... }:
    let
      db = logins.db;
      # a provider without an `address` in mesh.nix is reached by its node name
      host = if db.address != null then db.address else db.provider;
    in [
      (mesh.user { name = "shop"; home = "/srv/shop"; })
      (mesh.directory { path = "/srv/shop"; owner = "shop"; group = "shop"; })
      (mesh.file {
        path = "/srv/shop/database.conf";
        owner = "shop";
        group = "shop";
        content = ''
          host=${host}
          port=${toString db.facts.port}
          dbname=${db.facts.database}
          sslmode=${db.facts.sslmode}
          user=${db.login}
          password_file=${db.path}
        '';
      })
      (mesh.directory { path = "/var/lib/mesh"; })
      (mesh.directory { path = "/var/lib/mesh/credentials"; mode = "0711"; })
      (mesh.service {
        name = "shop";
        user = "shop";
        # naming the file restarts the shop when its connection settings change
        exec = [ "/srv/shop/bin/shop" "--port" (toString settings.port) "--database" "/srv/shop/database.conf" ];
        # and naming the credential restarts it when its password is made anew
        environment = { DATABASE_PASSWORD_FILE = db.path; };
        after = [ "network-online.target" ];
      })
    ];
}
