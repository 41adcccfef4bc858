{
  description = "an app that forgot where its credential goes";
  consumes.kv = { service = "kv"; };
}
