{
  description = "a cache";
  requires = [ "db" ];
}
