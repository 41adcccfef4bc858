# `//` chains, as modules layer defaults, profile, node and override sets: 50,000
# records each built as `defaults // profile // node // overrides`, then read.
let
  defaults = { port = 80; user = "root"; group = "root"; mode = "0644"; restart = "on-failure"; after = [ ]; enable = true; workers = 1; };
  profiles = builtins.genList (p: { user = "profile${toString p}"; workers = p + 2; }) 10;
  node = i: { name = "n${toString i}"; port = 9000 + i; };
  overrides = i: if i - (i / 7) * 7 == 0 then { enable = false; mode = "0600"; } else { };
  record = i: defaults // builtins.elemAt profiles (i - (i / 10) * 10) // node i // overrides i // { index = i; };
  records = builtins.genList record 50000;
in
{
  count = builtins.length records;
  ports = builtins.foldl' (sum: r: sum + r.port + r.workers) 0 records;
  disabled = builtins.length (builtins.filter (r: !r.enable) records);
  modes = builtins.foldl' (sum: r: sum + builtins.stringLength (r.mode + r.user + r.name + r.group + r.restart)) 0 records;
  last = builtins.elemAt records 49999;
}
