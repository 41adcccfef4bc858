# proxy: a reverse proxy (Caddy, in a digest-pinned container) for the sites of the
# node. Sites come from this module's `sites` setting (mesh.nix) and from other
# modules on the node, which contribute them:
#   contributes.proxy.sites."shop.example.org" = { upstreams = [ "10.0.0.11:8000" ]; };
# The configuration is Caddy's JSON, made with `builtins.toJSON`, so no contributed
# string can change its structure; upstreams and the ACME e-mail are still typed
# (`strMatching`) and host names checked here, so a value Caddy would misread is
# refused at compile time.
{ mesh, ... }:
let
  inherit (mesh) types;
  # `HOST:PORT` or `[IPV6]:PORT`, what Caddy dials
  upstreamPattern = "([a-zA-Z0-9]([a-zA-Z0-9.-]{0,251}[a-zA-Z0-9])?|\\[[0-9a-fA-F:.]+]):[0-9]{1,5}";
  site = types.record {
    upstreams = types.listOf (types.strMatching upstreamPattern);
    tls = types.nullOr (types.enum [ "acme" "internal" "off" ]);
    certificate = types.nullOr types.path;
    key = types.nullOr types.path;
    hsts = types.nullOr types.bool;
  };

  label = "[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?";
  isHost = host: builtins.stringLength host <= 253
    && builtins.match "(\\*\\.)?(${label}\\.)*${label}" host != null;
  # the type checks the form; the port must also be one
  isUpstream = upstream:
    builtins.match upstreamPattern upstream != null
    && (let port = builtins.fromJSON (builtins.elemAt (builtins.match ".*:0*([0-9]+)" upstream) 0);
        in port >= 1 && port <= 65535);

  refuse = host: why: throw "proxy site `${host}`: ${why}";

  # a site with its defaults, or the error that says what is wrong with it
  checked = host: entry:
    let
      tls = if (entry.tls or null) == null then "acme" else entry.tls;
      certificate = entry.certificate or null;
      key = entry.key or null;
      files = certificate != null || key != null;
      bad = builtins.filter (upstream: !isUpstream upstream) entry.upstreams;
    in
    if !isHost host then
      refuse host "not a host name (lowercase DNS labels of letters, digits and `-`, separated by dots, optionally starting with `*.`)"
    else if entry.upstreams == [ ] then
      refuse host "no upstreams: give at least one `HOST:PORT` to proxy to"
    else if bad != [ ] then
      refuse host "upstream ${builtins.toJSON (builtins.head bad)} has no port from 1 to 65535"
    else if files && (certificate == null || key == null) then
      refuse host "give both `certificate` and `key`, or neither"
    else if files && tls == "off" then
      refuse host "`certificate` and `key` are given but `tls` is \"off\""
    else {
      inherit host certificate key;
      upstreams = entry.upstreams;
      tls = if files then "files" else tls;
      hsts = (entry.hsts or null) == true;
    };
in
{
  description = "Reverse proxy (Caddy in a pinned container) for the sites of the node, with ACME or given certificates";
  requires = [ "networking" ];

  settings = {
    sites = mesh.option {
      type = types.attrsOf site;
      default = { };
      description = "Sites by host name, besides the ones modules contribute: `upstreams` (HOST:PORT), `tls` (\"acme\", the default, \"internal\" or \"off\"), `certificate` and `key` (paths on the node, instead of ACME), `hsts`";
    };
    acmeEmail = mesh.option {
      type = types.nullOr (types.strMatching "[^@[:space:][:cntrl:]\"<>]+@[a-zA-Z0-9.-]+");
      default = null;
      description = "E-mail address given to the ACME CA (Let's Encrypt) for expiry notices; null registers without one";
    };
    redirectHttp = mesh.option {
      type = types.bool;
      default = true;
      description = "Whether plain HTTP requests for a TLS site are redirected to HTTPS";
    };
    hstsMaxAge = mesh.option {
      type = types.int;
      default = 31536000;
      description = "Seconds of the Strict-Transport-Security header sent by sites with `hsts = true`";
    };
    httpPort = mesh.option {
      type = types.port;
      default = 80;
      description = "TCP port for plain HTTP (and ACME's HTTP challenge)";
    };
    httpsPort = mesh.option {
      type = types.port;
      default = 443;
      description = "TCP port for HTTPS";
    };
  };

  collects.sites = types.attrsOf site;

  contributes = { settings, ... }: { networking.ports = [ settings.httpPort settings.httpsPort ]; };

  mirrors.caddy = "docker.io/library/caddy:2.8";

  shapes = { settings, collected, images, ... }:
    let
      twice = builtins.filter (host: builtins.hasAttr host collected.sites) (builtins.attrNames settings.sites);
      sites =
        if twice != [ ] then
          throw "proxy site `${builtins.head twice}` is set in the `sites` setting and contributed by a module on the node: remove one of them"
        else
          builtins.attrValues (builtins.mapAttrs checked (settings.sites // collected.sites));
      secure = builtins.filter (s: s.tls != "off") sites;
      plain = builtins.filter (s: s.tls == "off") sites;
      withFiles = builtins.filter (s: s.tls == "files") sites;
      withIssuer = tls: map (s: s.host) (builtins.filter (s: s.tls == tls) sites);

      route = s: {
        match = [ { host = [ s.host ]; } ];
        handle = [ {
          handler = "subroute";
          routes = [ {
            handle =
              (if s.hsts then [ {
                handler = "headers";
                response.set.Strict-Transport-Security = [ "max-age=${toString settings.hstsMaxAge}" ];
              } ] else [ ])
              ++ [ { handler = "reverse_proxy"; upstreams = map (dial: { inherit dial; }) s.upstreams; } ];
          } ];
        } ];
        terminal = true;
      };
      acme = { module = "acme"; } // (if settings.acmeEmail == null then { } else { email = settings.acmeEmail; });
      policies =
        (if withIssuer "acme" == [ ] then [ ] else [ { subjects = withIssuer "acme"; issuers = [ acme ]; } ])
        ++ (if withIssuer "internal" == [ ] then [ ] else [ { subjects = withIssuer "internal"; issuers = [ { module = "internal"; } ]; } ]);

      config = {
        admin.disabled = true;
        apps = {
          http = {
            http_port = settings.httpPort;
            https_port = settings.httpsPort;
            servers =
              (if secure == [ ] then { } else {
                https = {
                  listen = [ ":${toString settings.httpsPort}" ];
                  routes = map route secure;
                  automatic_https.disable_redirects = !settings.redirectHttp;
                };
              })
              // (if plain == [ ] then { } else {
                http = {
                  listen = [ ":${toString settings.httpPort}" ];
                  routes = map route plain;
                  automatic_https.disable = true;
                };
              });
          };
          # Caddy's own CA (`tls = "internal"`) must not try to change the trust store
          pki.certificate_authorities.local.install_trust = false;
          tls = {
            certificates.load_files = map (s: { inherit (s) certificate key; tags = [ s.host ]; }) withFiles;
            automation.policies = policies;
          };
        };
      };
      configFile = "/etc/mesh/proxy/caddy.json";
      certificateFiles = builtins.concatMap (s: [ s.certificate s.key ]) withFiles;
    in
    [
      (mesh.directory { path = "/etc/mesh"; })
      (mesh.directory { path = "/etc/mesh/proxy"; })
      (mesh.file { path = configFile; content = builtins.toJSON config + "\n"; })
      (mesh.directory { path = "/var/lib/mesh"; })
      (mesh.directory { path = "/var/lib/mesh/proxy"; mode = "0700"; })
      (mesh.container {
        name = "proxy";
        image = images.caddy;
        command = [ "caddy" "run" "--config" "/etc/mesh/proxy/caddy.json" ];
        # naming the host's file restarts the proxy when its configuration changes
        environment = { MESH_PROXY_CONFIG = configFile; };
        mounts = [
          # the directory, not the file: mesh-apply replaces files by rename
          { source = "/etc/mesh/proxy"; target = "/etc/mesh/proxy"; read_only = true; }
          # ACME account and certificates (the image's XDG_DATA_HOME)
          { source = "/var/lib/mesh/proxy"; target = "/data"; }
        ] ++ map (path: { source = path; target = path; read_only = true; }) (mesh.lib.unique certificateFiles);
        ports = [
          "${toString settings.httpPort}:${toString settings.httpPort}/tcp"
          "${toString settings.httpsPort}:${toString settings.httpsPort}/tcp"
        ];
      })
    ];
}
