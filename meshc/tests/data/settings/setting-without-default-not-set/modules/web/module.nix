{ mesh, ... }: {
  description = "a website";
  settings.domain = mesh.option { type = mesh.types.str; description = "the site's domain name"; };
}
