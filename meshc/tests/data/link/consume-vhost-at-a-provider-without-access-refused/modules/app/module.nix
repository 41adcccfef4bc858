{
  description = "an app";
  consumes.bus = { service = "amqp"; path = "/etc/app-bus"; vhost = "shop"; };
}
