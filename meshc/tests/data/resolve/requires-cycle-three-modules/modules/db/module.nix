{
  description = "the database";
  requires = [ "networking" "api" ];
}
