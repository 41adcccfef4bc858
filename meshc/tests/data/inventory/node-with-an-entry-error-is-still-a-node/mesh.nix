{
  nodes = {
    web1 = { key = "age12y52ld3kt27sk7w3rpt4d6n0mpndj2v2u02z7q8ra8sjr0saepcshezt9w"; modules = [ "app" ]; settings.app.database = "kv1"; };
    kv1 = { key = "age12xjejjsy5p5xj3y3hls5u4msyegj2jwdgyjaa4w6v6ylzu4lpdnsv7mdzg"; modules = [ "kv" ]; hostname = "kv1.lan"; };
  };
}
