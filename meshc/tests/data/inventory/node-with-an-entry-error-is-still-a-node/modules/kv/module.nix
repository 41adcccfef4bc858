{
  description = "a key-value store";
  provides.kv = { manifest = "/etc/kv-grants.json"; credentials = "/etc"; form = "plain"; };
}
