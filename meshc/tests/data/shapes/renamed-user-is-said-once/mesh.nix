{
  nodes.app1 = {
    key = "age17nkegg8q77unmvtxew9kpydfjgkq87lnenhucmkty0fwj2d4qfdq3p59xc";
    modules = [ "web" ];
  };
  nodes.app2 = {
    key = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p";
    modules = [ "web" ];
  };
}
