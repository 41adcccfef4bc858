{
  description = "a blog at www too";
  contributes.proxy.sites."www.example.org" = { upstreams = [ "127.0.0.1:8001" ]; };
}
