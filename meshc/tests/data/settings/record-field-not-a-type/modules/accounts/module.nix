{ mesh, ... }: {
  description = "accounts";
  settings.accounts = mesh.option {
    type = mesh.types.record { shell = "bash"; };
    default = { shell = "/bin/bash"; };
    description = "the account";
  };
}
