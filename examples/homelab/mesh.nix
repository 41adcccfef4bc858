# The example fleet: a gateway in front of two application nodes, which keep their
# data in the PostgreSQL of a database node and pass orders through the RabbitMQ of
# a broker node.
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
  nodes = {
    gateway = {
      key = "age12y52ld3kt27sk7w3rpt4d6n0mpndj2v2u02z7q8ra8sjr0saepcshezt9w";
      address = "10.0.0.1";
      modules = [ "proxy" "users" ];
      settings.proxy.upstreams = [ "10.0.0.11:8080" "10.0.0.12:8080" ];
      settings.users.accounts = admins;
    };
    app1 = {
      key = "age12xjejjsy5p5xj3y3hls5u4msyegj2jwdgyjaa4w6v6ylzu4lpdnsv7mdzg";
      address = "10.0.0.11";
      modules = [ "web" "monitoring" "users" "shop" ];
      settings.web.title = "app1";
      settings.users.accounts = admins;
    };
    app2 = {
      key = "age10z6pjstfg0ku6fywxvrn28qfxjve60w3cjzwrqfpwxxcy7fcw9eq8vzwav";
      address = "10.0.0.12";
      modules = [ "web" "shop" ];
      settings.web = { title = "app2"; port = 8080; };
      settings.shop.database = "db1";
    };
    db1 = {
      key = "age1nzfw236mhh7rad302jmpqt63z6aekq7ujljapf0vauy597plp3eqj2q3re";
      address = "10.0.0.21";
      modules = [ "postgres" ];
    };
    mq1 = {
      key = "age1sflntkshm5jk9a3m8gpy2zwerx3d7q0znsycw5vs59g40kfq9sjqnrvrrm";
      address = "10.0.0.31";
      modules = [ "rabbitmq" ];
    };
  };
}
