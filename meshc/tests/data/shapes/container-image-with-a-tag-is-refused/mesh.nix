{
  nodes.cache1 = { key = "age12xjejjsy5p5xj3y3hls5u4msyegj2jwdgyjaa4w6v6ylzu4lpdnsv7mdzg"; modules = [ "cache" ]; };
}
