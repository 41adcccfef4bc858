{ description = "local accounts, replacing the standard users module"; }
