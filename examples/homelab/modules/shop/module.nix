# shop: a web application with its own PostgreSQL login and its own RabbitMQ user.
# The compiler places each credential at its `path` on this node and grants the login
# on the provider's node; `logins.db` and `logins.bus` say where to connect (the
# provider's address and the facts it publishes; for the bus, the vhost granted) and
# as whom, so nothing here is hard-coded.
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
    # orders go through the fleet's RabbitMQ, in the shop's own vhost
    bus = {
      service = "amqp";
      vhost = "shop";
      permissions = { configure = "^shop\\."; write = "^shop\\."; read = "^shop\\."; };
      path = "/var/lib/mesh/credentials/shop-bus";
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
      (mesh.file {
        path = "/srv/shop/amqp.conf";
        owner = "shop";
        group = "shop";
        content = ''
          host=${logins.bus.facts.host}
          port=${toString logins.bus.facts.port}
          vhost=${logins.bus.facts.vhost}
          user=${logins.bus.login}
          password_file=${logins.bus.path}
        '';
      })
      (mesh.directory { path = "/var/lib/mesh"; })
      (mesh.directory { path = "/var/lib/mesh/credentials"; mode = "0711"; })
      (mesh.service {
        name = "shop";
        user = "shop";
        # naming the file restarts the shop when its connection settings change
        exec = [ "/srv/shop/bin/shop" "--port" (toString settings.port) "--database" "/srv/shop/database.conf" "--bus" "/srv/shop/amqp.conf" ];
        # and naming the credentials restarts it when a password is made anew
        environment = { DATABASE_PASSWORD_FILE = db.path; BUS_PASSWORD_FILE = logins.bus.path; };
        after = [ "network-online.target" ];
      })
    ];
}
