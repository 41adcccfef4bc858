# A NixOS-style module system in miniature: 200 modules each declare typed options
# and contribute config definitions; definitions are merged per option path (sets
# zipped, lists concatenated, a single value kept, conflicts refused), checked
# against the declared types, and the whole configuration is the fixpoint
# `let self = f self`: modules read the final config while contributing to it.
# A fleet of 20 hosts, each evaluating the 200 modules with its own base module.
let
  lib = rec {
    fix = f: let self = f self; in self;
    mapAttrs = builtins.mapAttrs;
    all = builtins.all;

    types = {
      int = { name = "int"; check = builtins.isInt; };
      bool = { name = "bool"; check = builtins.isBool; };
      str = { name = "str"; check = builtins.isString; };
      listOf = element: { name = "listOf ${element.name}"; check = value: builtins.isList value && all element.check value; };
    };

    mkOption = { type, default }: { _type = "option"; inherit type default; };
    isOption = value: builtins.isAttrs value && value ? _type && value._type == "option";

    # options: sets of declarations are merged recursively, a declaration is kept
    recursiveMerge = left: right:
      left // mapAttrs
        (name: value:
          if left ? ${name} && builtins.isAttrs value && !(isOption value)
          then recursiveMerge left.${name} value
          else value)
        right;

    # config: the definitions of one path from every module, merged
    mergeDefinitions = path: definitions:
      if all builtins.isAttrs definitions then
        builtins.zipAttrsWith (name: mergeDefinitions (path ++ [ name ])) definitions
      else if all builtins.isList definitions then
        builtins.concatLists definitions
      else if builtins.length definitions == 1 then
        builtins.head definitions
      else if all (definition: definition == builtins.head definitions) definitions then
        builtins.head definitions
      else
        throw "conflicting definitions for `${builtins.concatStringsSep "." path}`";

    # the declared options with their defaults, overridden by the definitions, checked
    applyOptions = path: options: config:
      mapAttrs
        (name: option:
          if isOption option then
            let value = if config ? ${name} then config.${name} else option.default;
            in if option.type.check value then value
            else throw "`${builtins.concatStringsSep "." (path ++ [ name ])}` is not a ${option.type.name}"
          else applyOptions (path ++ [ name ]) option (config.${name} or { }))
        options
      // removeAttrs config (builtins.attrNames options);

    evalModules = modules: fix (self:
      let
        evaluated = map (module: module { inherit (self) config options; }) modules;
        options = builtins.foldl' recursiveMerge { } (map (module: module.options or { }) evaluated);
        definitions = mergeDefinitions [ ] (map (module: module.config or { }) evaluated);
      in {
        inherit options;
        config = applyOptions [ ] options definitions;
      });
  };

  inherit (lib) types mkOption;

  service = i: { config, options }:
    let
      name = "service${toString i}";
      group = "group${toString (i / 10)}";
      self = config.services.${name};
      previous = config.services."service${toString (i - 1)}";
    in
    {
      options.services.${name} = {
        enable = mkOption { type = types.bool; default = false; };
        port = mkOption { type = types.int; default = 8000 + i; };
        user = mkOption { type = types.str; default = "user${toString i}"; };
        after = mkOption { type = types.listOf types.str; default = [ ]; };
        workers = mkOption { type = types.int; default = 1; };
      };
      config = {
        services.${name} = {
          enable = i / 3 * 3 == i;
          after = if i == 0 then [ ] else [ "service${toString (i - 1)}" ];
          workers = if i == 0 then 1 else previous.workers + (if self.enable then 1 else 0);
        };
        networking.firewall.allowedTCPPorts = if self.enable then [ self.port ] else [ ];
        users.${group}.members = [ self.user ];
        environment.etc."${name}.conf".text = ''
          port = ${toString self.port}
          user = ${self.user}
          workers = ${toString self.workers}
          after = ${builtins.concatStringsSep " " self.after}
        '';
      };
    };

  base = host: { config, options }: {
    options.networking.firewall.allowedTCPPorts = mkOption { type = types.listOf types.int; default = [ ]; };
    options.networking.hostName = mkOption { type = types.str; default = "mesh"; };
    config.networking.hostName = "host${toString host}";
    config.networking.firewall.allowedTCPPorts = [ (2200 + host) ];
  };

  services = builtins.genList service 200;

  summary = host:
    let config = (lib.evalModules ([ (base host) ] ++ services)).config;
    in {
      hostName = config.networking.hostName;
      enabled = builtins.length (builtins.filter (name: config.services.${name}.enable) (builtins.attrNames config.services));
      ports = builtins.length config.networking.firewall.allowedTCPPorts;
      workers = config.services.service199.workers;
      groups = builtins.length (builtins.attrNames config.users);
      lastMembers = config.users.group19.members;
      etc = builtins.stringLength (builtins.concatStringsSep "" (map (file: config.environment.etc.${file}.text) (builtins.attrNames config.environment.etc)));
    };
in
builtins.genList summary 20
