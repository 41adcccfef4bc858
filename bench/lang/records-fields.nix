# Records read field by field: 100,000 settings records, every field of each read
# (and one missing field read with `or`), summed and counted.
let
  records = builtins.genList (i: {
    port = 1000 + i;
    replicas = i - (i / 4) * 4 + 1;
    enable = i - (i / 3) * 3 != 0;
    user = "u${toString (i / 1000)}";
    limits = { memory = i * 2; files = 1024; };
  }) 100000;
  # the accumulator is forced each step (`deepSeq`), as a strict fold would
  step = acc: record: builtins.deepSeq acc {
    ports = acc.ports + record.port;
    replicas = acc.replicas + record.replicas;
    enabled = acc.enabled + (if record.enable then 1 else 0);
    memory = acc.memory + record.limits.memory + record.limits.files;
    extra = acc.extra + (record.extra or 0);
    users = acc.users + builtins.stringLength record.user;
  };
in
builtins.foldl' step { ports = 0; replicas = 0; enabled = 0; memory = 0; extra = 0; users = 0; } records
