{
  nodes = {
    web1 = { key = "age12y52ld3kt27sk7w3rpt4d6n0mpndj2v2u02z7q8ra8sjr0saepcshezt9w"; modules = [ "app" ]; };
    web2 = { key = "age10z6pjstfg0ku6fywxvrn28qfxjve60w3cjzwrqfpwxxcy7fcw9eq8vzwav"; modules = [ "app" ]; };
    kv1 = { key = "age12xjejjsy5p5xj3y3hls5u4msyegj2jwdgyjaa4w6v6ylzu4lpdnsv7mdzg"; modules = [ "kv" ]; };
  };
}
