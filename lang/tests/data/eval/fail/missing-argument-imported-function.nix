# expect: E023
import ./lib/needs-name.nix { }
