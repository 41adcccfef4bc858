{ mesh, ... }: {
  description = "files under the node's existing /data";
  shapes = [
    (mesh.file { path = "/data/README"; content = "managed by mesh\n"; })
  ];
}
