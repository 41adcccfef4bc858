# Two providers of one service with different settings, one without an address;
# each consumer sees the facts of the provider it chose.
{
  nodes = {
    db1 = {
      key = "age1nzfw236mhh7rad302jmpqt63z6aekq7ujljapf0vauy597plp3eqj2q3re";
      address = "10.0.0.21";
      modules = [ "kv" ];
      settings.kv.port = 7000;
    };
    db2 = {
      key = "age12y52ld3kt27sk7w3rpt4d6n0mpndj2v2u02z7q8ra8sjr0saepcshezt9w";
      modules = [ "kv" ];
    };
    app1 = {
      key = "age12xjejjsy5p5xj3y3hls5u4msyegj2jwdgyjaa4w6v6ylzu4lpdnsv7mdzg";
      modules = [ "client" ];
      settings.client.store = "db1";
    };
    app2 = {
      key = "age10z6pjstfg0ku6fywxvrn28qfxjve60w3cjzwrqfpwxxcy7fcw9eq8vzwav";
      modules = [ "client" ];
      settings.client.store = "db2";
    };
  };
}
