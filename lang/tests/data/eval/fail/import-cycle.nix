# expect: E027
import ./lib/cycle.nix
