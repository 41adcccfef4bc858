{
  description = "a website";
  contributes = { ... }: { monitoring.targets.site = "http://localhost:8080/"; };
}
