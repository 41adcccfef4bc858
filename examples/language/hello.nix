# A small program in the mesh language: `meshc eval examples/language/hello.nix`
# prints exactly what `nix-instantiate --eval --strict` prints for it.
let
  ports = { http = 80; https = 443; ssh = 22; };
  describe = name: port: "${name} listens on ${toString port}";
in
{
  greeting = "hello, mesh";
  services = builtins.attrValues (builtins.mapAttrs describe ports);
  open = builtins.sort builtins.lessThan (builtins.attrValues ports);
}
