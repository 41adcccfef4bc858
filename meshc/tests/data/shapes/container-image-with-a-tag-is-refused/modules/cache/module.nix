{ mesh, ... }:
{
  description = "a cache whose image names a tag";
  shapes = { ... }: [
    (mesh.container { name = "redis"; image = "docker.io/library/redis:7"; })
  ];
}
