{
  description = "a website";
  requires = [ "web" ];
}
