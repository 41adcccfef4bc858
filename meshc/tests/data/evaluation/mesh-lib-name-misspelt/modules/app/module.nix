{ mesh, ... }: {
  description = "an app with a greeting";
  settings.greeting = mesh.option { type = mesh.types.str; default = mesh.lib.optionalstring true "hello"; description = "greeting"; };
}
