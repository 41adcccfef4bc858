{ mesh, lib, ... }: {
  description = "a website";
  shapes = _: lib.optionals true [ ];
}
