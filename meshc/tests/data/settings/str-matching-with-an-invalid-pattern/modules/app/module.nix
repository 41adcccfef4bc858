{ mesh, ... }:
{
  description = "an app with a Perl-style pattern";
  settings.version = mesh.option { type = mesh.types.strMatching "\\d+"; default = "1"; description = "version"; };
}
