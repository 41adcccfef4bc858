{
  description = "a website";
  contributes = { ... }: [ 8080 ];
}
