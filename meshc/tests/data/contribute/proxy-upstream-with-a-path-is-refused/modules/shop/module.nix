{
  description = "a shop whose upstream carries a path";
  contributes.proxy.sites."shop.example.org".upstreams = [ "127.0.0.1:8000/admin" ];
}
