{
  description = "a website";
  requires = "networking";
}
