# expect: E035
import ./lib/nope.nix
