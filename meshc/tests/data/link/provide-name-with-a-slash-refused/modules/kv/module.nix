{
  description = "a key-value store";
  provides."kv/../../x" = { manifest = "/etc/kv-grants.json"; credentials = "/etc"; form = "plain"; };
}
