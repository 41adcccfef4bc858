# users: operator accounts with their groups and SSH keys.
{ mesh, ... }:
{
  description = "Operator accounts: a user, a home directory and authorized SSH keys for each";

  settings.accounts = mesh.option {
    type = mesh.types.attrsOf (mesh.types.record {
      groups = mesh.types.listOf mesh.types.str;
      keys = mesh.types.listOf mesh.types.str;
      shell = mesh.types.nullOr mesh.types.str;
    });
    default = { };
    description = "Accounts by user name: supplementary groups, SSH public keys and login shell";
  };

  shapes = { settings, ... }:
    builtins.concatLists (builtins.attrValues (builtins.mapAttrs (name: account: [
      (mesh.user {
        inherit name;
        system = false;
        home = "/home/${name}";
        # a missing shell and `shell = null` both mean the default
        shell = if (account.shell or null) == null then "/bin/bash" else account.shell;
        inherit (account) groups;
      })
      (mesh.directory { path = "/home/${name}"; owner = name; group = name; mode = "0750"; })
      (mesh.directory { path = "/home/${name}/.ssh"; owner = name; group = name; mode = "0700"; })
      (mesh.file {
        path = "/home/${name}/.ssh/authorized_keys";
        owner = name;
        group = name;
        mode = "0600";
        content = builtins.concatStringsSep "" (map (key: key + "\n") account.keys);
      })
    ]) settings.accounts));
}
