# Interpolation in a loop, as modules render configuration files: 40,000 records
# rendered into lines with several `${...}` each, joined, measured.
let
  hosts = builtins.genList (i: { name = "host${toString i}"; port = 8000 + i; user = "svc${toString (i / 100)}"; }) 40000;
  line = host: "server ${host.name} listen=${toString host.port} user=${host.user} path=/var/lib/${host.name}/data";
  text = builtins.concatStringsSep "\n" (map line hosts);
in
{
  length = builtins.stringLength text;
  head = builtins.substring 0 60 text;
  tail = builtins.substring (builtins.stringLength text - 60) 60 text;
}
