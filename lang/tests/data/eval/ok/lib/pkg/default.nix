{ kind = "directory import"; sibling = import ./other.nix; }
