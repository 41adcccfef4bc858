let helper = import ../helper.nix; in {
  fromParent = helper.greeting;
  here = builtins.baseNameOf ./.;
}
