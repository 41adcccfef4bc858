# shop: offers itself to the proxy and its metrics to monitoring, on its own node.
{ mesh, ... }:
{
  description = "A shop behind the proxy of its node";
  contributes = { ... }: {
    proxy.sites."shop.example.org" = { upstreams = [ "host.containers.internal:8000" ]; certificate = null; hsts = true; };
    monitoring.jobs.shop = [ "127.0.0.1:8000" ];
  };
}
