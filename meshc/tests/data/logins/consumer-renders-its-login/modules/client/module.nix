{ mesh, ... }:
{
  description = "a client that connects where its login says";
  consumes.store = { service = "kv"; path = "/etc/client/store-password"; };
  shapes = { logins, ... }:
    let store = logins.store;
    in [
      (mesh.directory { path = "/etc/client"; })
      (mesh.file {
        path = "/etc/client/store.conf";
        content = "host=${store.address} port=${toString store.facts.port} database=${store.facts.database} served-by=${store.facts.served-by} user=${store.login} provider=${store.provider} passfile=${store.path}\n";
      })
    ];
}
