{
  description = "an app";
  consumes.bus = { service = "amqp"; path = "/etc/app-bus"; mode = "rw-------"; vhost = "shop"; };
}
