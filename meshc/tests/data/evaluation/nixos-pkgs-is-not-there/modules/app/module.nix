{ mesh, ... }: {
  description = "an app";
  shapes = [
    (mesh.service { name = "cache"; exec = [ "${pkgs.redis}/bin/redis-server" ]; })
  ];
}
