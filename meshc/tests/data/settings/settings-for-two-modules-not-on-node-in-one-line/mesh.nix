{
  nodes.app1 = {
    key = "age17nkegg8q77unmvtxew9kpydfjgkq87lnenhucmkty0fwj2d4qfdq3p59xc";
    modules = [ "base" ];
    settings.api.port = 81;
    settings.web.port = 80;
  };
}
