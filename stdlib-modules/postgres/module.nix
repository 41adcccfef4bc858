# postgres: a PostgreSQL server and the provisioner that keeps its logins in step
# with the grants manifest the compiler writes. One assignment gives a working
# database provider: consumers on any node ask for a login with
#   consumes.db = { service = "postgres"; from = null; path = "/var/lib/mesh/credentials/app-db"; };
# and connect with what `logins.db` tells them: `address`, `login`, `path`, and the
# facts published here (`facts.port`, `facts.database`, `facts.sslmode`).
{ mesh, ... }:
{
  description = "PostgreSQL server with a provisioner that creates, updates and disables logins as grants come and go";
  requires = [ "networking" ];

  settings = {
    port = mesh.option {
      type = mesh.types.port;
      default = 5432;
      description = "TCP port PostgreSQL listens on";
    };
    pollInterval = mesh.option {
      type = mesh.types.int;
      default = 5;
      description = "Seconds between the provisioner's checks of the grants manifest";
    };
  };

  contributes = { settings, ... }: { networking.ports = [ settings.port ]; };

  # the provider receives SCRAM-SHA-256 verifiers, never a consumer's password; its
  # consumers receive, as `logins.NAME.facts`, what a client needs besides its login
  provides.postgres = {
    manifest = "/etc/mesh/grants/postgres.json";
    credentials = "/var/lib/mesh/grants/postgres";
    form = "scram-sha-256";
    facts = { settings, ... }: {
      port = settings.port;
      # the database every login may connect to (the server's default one)
      database = "postgres";
      # the server is started without TLS: a client must not require it
      sslmode = "disable";
    };
  };

  # the superuser's password: made once for this node, sealed to it, kept
  needs.superuser = { path = "/var/lib/mesh/postgres/superuser"; mode = "0400"; };

  mirrors = {
    postgres = "docker.io/library/postgres:16";
    provisioner = "ghcr.io/mesh-project/mesh-provision:0.1.0";
  };

  shapes = { settings, images, ... }:
    let port = toString settings.port;
    in [
      (mesh.directory { path = "/etc/mesh"; })
      (mesh.directory { path = "/etc/mesh/grants"; })
      (mesh.directory { path = "/var/lib/mesh"; })
      (mesh.directory { path = "/var/lib/mesh/postgres"; mode = "0700"; })
      (mesh.directory { path = "/var/lib/mesh/grants"; })
      (mesh.directory { path = "/var/lib/mesh/grants/postgres"; mode = "0700"; })
      (mesh.user { name = "postgres"; home = "/var/lib/postgres"; })
      (mesh.directory { path = "/var/lib/postgres"; owner = "postgres"; group = "postgres"; mode = "0700"; })
      (mesh.container {
        name = "postgres";
        image = images.postgres;
        command = [ "postgres" "-c" "port=${port}" "-c" "password_encryption=scram-sha-256" ];
        environment = {
          PGDATA = "/var/lib/postgresql/data/pgdata";
          POSTGRES_PASSWORD_FILE = "/run/secrets/superuser";
          POSTGRES_INITDB_ARGS = "--auth-host=scram-sha-256";
        };
        mounts = [
          { source = "/var/lib/postgres"; target = "/var/lib/postgresql/data"; }
          { source = "/var/lib/mesh/postgres/superuser"; target = "/run/secrets/superuser"; read_only = true; }
        ];
        ports = [ "${port}:${port}/tcp" ];
      })
      (mesh.container {
        name = "postgres-provisioner";
        image = images.provisioner;
        command = [
          "mesh-provision"
          "--manifest" "/etc/mesh/grants/postgres.json"
          # the server's published port, from the provisioner's own network namespace
          "--postgres" "postgres://postgres@host.containers.internal:${port}/postgres"
          "--password-file" "/run/secrets/superuser"
          "--watch" "--interval" (toString settings.pollInterval)
        ];
        mounts = [
          # the directory, not the file: mesh-apply replaces the manifest by rename, and a
          # bind mount of the file would keep showing the old one
          { source = "/etc/mesh/grants"; target = "/etc/mesh/grants"; read_only = true; }
          { source = "/var/lib/mesh/grants/postgres"; target = "/var/lib/mesh/grants/postgres"; read_only = true; }
          { source = "/var/lib/mesh/postgres/superuser"; target = "/run/secrets/superuser"; read_only = true; }
        ];
      })
    ];
}
