{ mesh, ... }:
{
  description = "an app whose configuration asks for a billion lines";
  shapes = { ... }: [
    (mesh.file {
      path = "/etc/app.conf";
      content = builtins.concatStringsSep "\n" (builtins.genList (line: "line ${toString line}") 1000000000);
    })
  ];
}
