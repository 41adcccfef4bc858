{ mesh, ... }: {
  description = "a database in a container";
  shapes = [
    (mesh.container {
      name = "db";
      image = "registry.mesh.internal:5000/library/postgres@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
      mounts = [
        { source = "/srv/pgdata"; target = "/var/lib/postgresql/data"; }
        { source = "/srv/pgdata"; target = "/backup"; read_only = true; }
      ];
    })
  ];
}
