{
  description = "a website";
  requires = [ "networking" ];
  contributes = { ... }: { networking.port = [ 8080 ]; };
}
