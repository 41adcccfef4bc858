{
  description = "an API";
  contributes = { ... }: { monitoring.targets.site = "http://localhost:9000/"; };
}
