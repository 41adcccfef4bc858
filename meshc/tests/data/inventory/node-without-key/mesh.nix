{
  nodes.db1 = {
    address = "10.0.0.11";
  };
}
