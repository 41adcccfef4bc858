{
  description = "a shop at www";
  contributes.proxy.sites."www.example.org" = { upstreams = [ "127.0.0.1:8000" ]; };
}
