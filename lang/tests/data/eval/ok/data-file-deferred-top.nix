{
  nodes = {
    n1 = { key = "k1"; address = "10.0.0.1"; modules = [ "a" "b" "c" ]; settings.a.replicas = 3; settings.a.port = 80; };
    n2 = { key = "k2"; address = "10.0.0.2"; modules = [ "b" ]; flags = [ true false null 1.5 ]; };
    n3 = { nested = [ [ 1 2 3 4 5 6 7 8 ] [ { x = 1; y = 2; z = 3; w = 4; } ] ]; };
  };
  merged = { a = { x = 1; y = 2; z = 3; w = 4; }; a.v = 5; };
  shadowed = rec { true = "t"; e = { a = true; b = 1; c = 2; d = 3; e = 4; }; };
  list = [ { a = 1; b = 2; c = 3; d = 4; } [ 1 2 3 4 5 6 7 8 ] "s" ];
  "quoted name" = { "a b" = 1; c.d = 2; c.e = [ 1 2 3 4 5 6 ]; };
}
