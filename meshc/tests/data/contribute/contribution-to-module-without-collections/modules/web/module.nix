{
  description = "a website";
  requires = [ ];
  contributes = { ... }: { db.ports = [ 8080 ]; };
}
