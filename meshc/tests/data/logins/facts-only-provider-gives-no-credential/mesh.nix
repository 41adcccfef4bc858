{
  nodes = {
    host1 = { key = "age12y52ld3kt27sk7w3rpt4d6n0mpndj2v2u02z7q8ra8sjr0saepcshezt9w"; address = "10.0.0.1"; modules = [ "exporter" ]; };
    host2 = { key = "age12xjejjsy5p5xj3y3hls5u4msyegj2jwdgyjaa4w6v6ylzu4lpdnsv7mdzg"; modules = [ "exporter" ]; settings.exporter.port = 9200; };
    watch = { key = "age10z6pjstfg0ku6fywxvrn28qfxjve60w3cjzwrqfpwxxcy7fcw9eq8vzwav"; modules = [ "collector" ]; settings.collector.targets = [ "host1" "host2" ]; };
  };
}
