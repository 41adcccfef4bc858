# imports itself
import ./cycle.nix
