# The example fleet: a gateway in front of two application nodes, which keep their
# data in the PostgreSQL of a database node and pass orders through the RabbitMQ of
# a broker node. Every node exports its metrics; the gateway's Prometheus scrapes
# them all.
let
  admins = {
    alice = {
      groups = [ "adm" ];
      keys = [ "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB0Dp9R5nM1x2rJqkq2c4Qx1r4hO8cQfC3lq0vV3m5Y3 alice@laptop" ];
      shell = null;
    };
  };
in
{
  registry = "registry.mesh.internal:5000";
  # the standard library's monitoring and node-exporter run the base system's
  # Prometheus packages (see the book's Standard modules)
  nodes = {
    gateway = {
      key = "age12y52ld3kt27sk7w3rpt4d6n0mpndj2v2u02z7q8ra8sjr0saepcshezt9w";
      address = "10.0.0.1";
      modules = [ "proxy" "monitoring" "node-exporter" "users" ];
      # the shop of both application nodes, behind the proxy, with a certificate from ACME
      settings.proxy = {
        sites."shop.example.org" = { upstreams = [ "10.0.0.11:8000" "10.0.0.12:8000" ]; hsts = true; };
        acmeEmail = "ops@example.org";
      };
      settings.monitoring.nodes = [ "app1" "app2" "db1" "gateway" "mq1" ];
      settings.users.accounts = admins;
    };
    app1 = {
      key = "age12xjejjsy5p5xj3y3hls5u4msyegj2jwdgyjaa4w6v6ylzu4lpdnsv7mdzg";
      address = "10.0.0.11";
      modules = [ "web" "node-exporter" "users" "shop" ];
      settings.web.title = "app1";
      settings.users.accounts = admins;
    };
    app2 = {
      key = "age10z6pjstfg0ku6fywxvrn28qfxjve60w3cjzwrqfpwxxcy7fcw9eq8vzwav";
      address = "10.0.0.12";
      modules = [ "web" "node-exporter" "shop" ];
      settings.web = { title = "app2"; port = 8080; };
      settings.shop.database = "db1";
    };
    db1 = {
      key = "age1nzfw236mhh7rad302jmpqt63z6aekq7ujljapf0vauy597plp3eqj2q3re";
      address = "10.0.0.21";
      modules = [ "postgres" "node-exporter" ];
    };
    mq1 = {
      key = "age1sflntkshm5jk9a3m8gpy2zwerx3d7q0znsycw5vs59g40kfq9sjqnrvrrm";
      address = "10.0.0.31";
      modules = [ "rabbitmq" "node-exporter" ];
    };
  };
}
