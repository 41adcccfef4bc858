# expect: E001
import ./lib/broken.nix
