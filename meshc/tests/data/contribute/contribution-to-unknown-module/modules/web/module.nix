{
  description = "a website";
  contributes = { ... }: { netwrking.ports = [ 8080 ]; };
}
