{
  description = "a website";
  requires = [ "netwrking" ];
}
