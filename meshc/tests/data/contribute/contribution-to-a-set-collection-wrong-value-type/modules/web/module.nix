{
  description = "a website";
  contributes = { ... }: { monitoring.targets.web = 8080; };
}
