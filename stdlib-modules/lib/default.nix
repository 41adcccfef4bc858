# mesh.lib: the pure helpers of nixpkgs' `lib` that module code uses most, under their
# nixpkgs names and with their semantics, written in the mesh language. Every function
# here is also evaluated by `nix-instantiate` in the test suite (compiler/tests/lib.rs),
# which checks that mesh and Nix agree on it. The namespaces (`lib.lists`,
# `lib.strings`, `lib.attrsets`, `lib.trivial`) hold the same functions as the top level.
let
  lib = trivial // lists // strings // attrsets // {
    inherit trivial lists strings attrsets;
  };
  trivial = import ./trivial.nix lib;
  lists = import ./lists.nix lib;
  strings = import ./strings.nix lib;
  attrsets = import ./attrsets.nix lib;
in
lib
