# Training for scripts/release (not a benchmark): sets made, merged, read and
# updated in loops, as module systems do.
let
  n = 4000;
  names = builtins.genList (i: "a${toString i}") n;
  base = builtins.listToAttrs (map (name: { inherit name; value = { port = 1; tags = [ name ]; }; }) names);
  mapped = builtins.mapAttrs (name: value: value // { port = value.port + 1; seen = true; }) base;
  zipped = builtins.zipAttrsWith (name: values: builtins.length values) (builtins.genList (i: { x = i; y = i * 2; "z${toString (i - (i / 10) * 10)}" = i; }) n);
  recursiveUpdate = left: right:
    left // builtins.mapAttrs
      (name: value:
        if builtins.isAttrs value && left ? ${name} && builtins.isAttrs left.${name}
        then recursiveUpdate left.${name} value
        else value)
      right;
  layers = builtins.genList (i: { services.${"s${toString (i - (i / 40) * 40)}"} = { enable = true; index = i; }; networking.ports = [ i ]; }) 600;
  merged = builtins.foldl' recursiveUpdate { } layers;
  record = i: { inherit i; name = "r${toString i}"; limits = { memory = i; files = 64; }; extra = null; };
  readAll = builtins.foldl' (acc: r: acc + r.i + r.limits.memory + r.limits.files + (r.missing or 0)) 0 (builtins.genList record n);
  chain = builtins.foldl' (acc: i: acc // { "c${toString (i - (i / 30) * 30)}" = i; last = i; }) { } (builtins.genList (i: i) n);
in
{
  ports = builtins.foldl' (acc: name: acc + mapped.${name}.port) 0 (builtins.attrNames mapped);
  values = builtins.foldl' (acc: value: acc + value.port) 0 (builtins.attrValues mapped);
  zipped = zipped.x + zipped.y;
  merged = builtins.length (builtins.attrNames merged.services);
  readAll = readAll;
  chain = chain.last;
  removed = builtins.length (builtins.attrNames (removeAttrs mapped (builtins.genList (i: "a${toString i}") 100)));
  common = builtins.length (builtins.attrNames (builtins.intersectAttrs mapped base));
  caught = builtins.length (builtins.catAttrs "port" (builtins.attrValues mapped));
  has = builtins.length (builtins.filter (name: builtins.hasAttr name base && base ? ${name}) names);
  deep = builtins.deepSeq merged (builtins.seq chain true);
}
