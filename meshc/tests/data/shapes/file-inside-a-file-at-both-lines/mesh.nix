{
  # the node is said to have the directory, so only the plan's own rule refuses this
  base.paths = [ "/etc/app/conf" ];
  nodes.app1 = {
    key = "age17nkegg8q77unmvtxew9kpydfjgkq87lnenhucmkty0fwj2d4qfdq3p59xc";
    modules = [ "app" "extra" ];
  };
}
