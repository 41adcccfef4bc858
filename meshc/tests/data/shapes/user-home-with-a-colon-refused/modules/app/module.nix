{ mesh, ... }: {
  description = "an app";
  shapes = [ (mesh.user { name = "app"; home = "/srv/app:0:0::/root:/bin/sh"; }) ];
}
