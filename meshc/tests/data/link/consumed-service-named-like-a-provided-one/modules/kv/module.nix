{
  description = "a key-value store";
  provides.kv-store = { manifest = "/etc/kv-grants.json"; credentials = "/etc"; form = "plain"; };
}
