{
  description = "a key-value store that only says where it listens";
  provides.kv = { facts.port = 7000; };
}
