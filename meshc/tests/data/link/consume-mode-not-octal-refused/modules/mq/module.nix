{
  description = "a broker";
  provides.amqp = { manifest = "/etc/amqp-grants.json"; credentials = "/etc"; form = "rabbit_password_hashing_sha256"; };
}
