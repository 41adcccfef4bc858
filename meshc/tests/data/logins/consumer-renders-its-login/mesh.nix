# A provider that publishes facts, a consumer that renders its connection settings
# from `logins`, and a node that has nothing to do with either.
{
  nodes = {
    db1 = {
      key = "age1nzfw236mhh7rad302jmpqt63z6aekq7ujljapf0vauy597plp3eqj2q3re";
      address = "10.0.0.21";
      modules = [ "kv" ];
      settings.kv.port = 7000;
    };
    app1 = {
      key = "age12xjejjsy5p5xj3y3hls5u4msyegj2jwdgyjaa4w6v6ylzu4lpdnsv7mdzg";
      address = "10.0.0.11";
      modules = [ "client" ];
    };
    other = {
      key = "age10z6pjstfg0ku6fywxvrn28qfxjve60w3cjzwrqfpwxxcy7fcw9eq8vzwav";
      address = "10.0.0.12";
      modules = [ "plain" ];
    };
  };
}
