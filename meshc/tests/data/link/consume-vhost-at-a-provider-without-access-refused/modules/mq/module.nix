{
  description = "a broker";
  provides.amqp = { manifest = "/etc/amqp-grants.json"; credentials = "/etc"; form = "scram-sha-256"; };
}
