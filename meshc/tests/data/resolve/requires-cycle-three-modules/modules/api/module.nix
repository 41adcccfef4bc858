{
  description = "the API server";
  requires = [ "cache" ];
}
