{
  description = "a website";
  requires = [ "networking" ];
  contributes = { ... }: { networking.ports = [ "8080" ]; };
}
