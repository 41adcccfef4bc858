{
  description = "a shop whose host name would close the proxy's block";
  contributes.proxy.sites."shop.example.org; } server {" = { upstreams = [ "127.0.0.1:8000" ]; };
}
