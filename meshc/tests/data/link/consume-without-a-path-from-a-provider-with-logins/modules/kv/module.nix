{
  description = "a key-value store with logins";
  provides.kv = { manifest = "/etc/kv-grants.json"; credentials = "/etc"; form = "plain"; };
}
