# rabbitmq: a RabbitMQ broker and the provisioner that keeps its users in step with
# the grants manifest the compiler writes. One assignment gives a working AMQP
# provider: consumers on any node ask for a login in a vhost with
#   consumes.bus = { service = "amqp"; vhost = "shop"; path = "/var/lib/mesh/credentials/shop-bus";
#                    permissions = { configure = "^shop\\."; write = "^shop\\."; read = "^shop\\."; }; };
# and connect with what `logins.bus` tells them: `login`, `path`, and the facts
# published here (`facts.host`, `facts.port`, and their grant's `facts.vhost`).
{ mesh, ... }:
{
  description = "RabbitMQ broker with a provisioner that creates, updates and disables users as grants come and go";
  requires = [ "networking" ];

  settings = {
    port = mesh.option {
      type = mesh.types.port;
      default = 5672;
      description = "TCP port RabbitMQ takes AMQP connections on";
    };
    managementPort = mesh.option {
      type = mesh.types.port;
      default = 15672;
      description = "TCP port of RabbitMQ's management HTTP API, which the provisioner talks to";
    };
    pollInterval = mesh.option {
      type = mesh.types.int;
      default = 5;
      description = "Seconds between the provisioner's checks of the grants manifest";
    };
  };

  contributes = { settings, ... }: { networking.ports = [ settings.port ]; };

  # the broker receives each login's salted SHA-256 hash in RabbitMQ's own format,
  # never a consumer's password; each grant carries the consumer's vhost and permissions
  provides.amqp = {
    manifest = "/etc/mesh/grants/amqp.json";
    credentials = "/var/lib/mesh/grants/amqp";
    form = "rabbit_password_hashing_sha256";
    facts = { node, settings, ... }: {
      host = if node.address != null then node.address else node.name;
      port = settings.port;
    };
  };

  # the administrator's password: made once for this node, sealed to it, kept
  needs.administrator = { path = "/var/lib/mesh/rabbitmq/administrator"; mode = "0400"; };

  mirrors = {
    rabbitmq = "docker.io/library/rabbitmq:3.13-management";
    provisioner = "ghcr.io/mesh-project/mesh-provision:0.1.0";
  };

  shapes = { settings, images, ... }:
    let
      port = toString settings.port;
      management = toString settings.managementPort;
    in [
      (mesh.directory { path = "/etc/mesh"; })
      (mesh.directory { path = "/etc/mesh/grants"; })
      (mesh.directory { path = "/var/lib/mesh"; })
      (mesh.directory { path = "/var/lib/mesh/rabbitmq"; mode = "0700"; })
      (mesh.directory { path = "/var/lib/mesh/grants"; })
      (mesh.directory { path = "/var/lib/mesh/grants/amqp"; mode = "0700"; })
      (mesh.directory { path = "/var/lib/rabbitmq"; mode = "0700"; })
      (mesh.container {
        name = "rabbitmq";
        image = images.rabbitmq;
        # RabbitMQ reads its first administrator from the environment when its
        # database is new; the password is read from the need here, so it is in
        # no plan, unit file or image
        command = [
          "sh" "-c"
          "RABBITMQ_DEFAULT_PASS=\"$(cat /run/secrets/administrator)\" exec docker-entrypoint.sh rabbitmq-server"
        ];
        environment = { RABBITMQ_DEFAULT_USER = "administrator"; };
        mounts = [
          { source = "/var/lib/rabbitmq"; target = "/var/lib/rabbitmq"; }
          { source = "/var/lib/mesh/rabbitmq/administrator"; target = "/run/secrets/administrator"; read_only = true; }
        ];
        # the management port is published for the provisioner but not opened in the
        # firewall (`networking.ports` has only the AMQP port)
        ports = [ "${port}:5672/tcp" "${management}:15672/tcp" ];
      })
      (mesh.container {
        name = "rabbitmq-provisioner";
        image = images.provisioner;
        command = [
          "mesh-provision"
          "--manifest" "/etc/mesh/grants/amqp.json"
          # the management API's published port, from the provisioner's own network namespace
          "--rabbitmq" "http://administrator@host.containers.internal:${management}"
          "--password-file" "/run/secrets/administrator"
          "--watch" "--interval" (toString settings.pollInterval)
        ];
        mounts = [
          # the directory, not the file: mesh-apply replaces the manifest by rename
          { source = "/etc/mesh/grants"; target = "/etc/mesh/grants"; read_only = true; }
          { source = "/var/lib/mesh/grants/amqp"; target = "/var/lib/mesh/grants/amqp"; read_only = true; }
          { source = "/var/lib/mesh/rabbitmq/administrator"; target = "/run/secrets/administrator"; read_only = true; }
        ];
      })
    ];
}
