{
  description = "a shop that offers the site mesh.nix already sets";
  contributes.proxy.sites."shop.example.org".upstreams = [ "127.0.0.1:8000" ];
}
