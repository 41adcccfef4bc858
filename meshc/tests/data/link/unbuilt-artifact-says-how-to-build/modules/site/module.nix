{
  description = "a static site";
  artifacts.site = { directory = ./public; };
}
