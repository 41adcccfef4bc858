{
  description = "an app that asks for a credential where there is none";
  consumes.kv = { service = "kv"; path = "/etc/app-kv"; };
}
