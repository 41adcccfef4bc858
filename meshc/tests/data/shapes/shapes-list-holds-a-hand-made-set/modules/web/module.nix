{ mesh, ... }: {
  description = "a website";
  shapes = [
    { kind = "file"; path = "/etc/motd"; content = "hi\n"; }
  ];
}
