{
  nodes.db1 = {
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB0Dp9R5nM1x2rJqkq2c4Qx1r4hO8cQfC3lq0vV3m5Y3";
  };
}
