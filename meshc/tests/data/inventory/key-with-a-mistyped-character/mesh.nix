{
  nodes.db1 = {
    key = "age17nkegg8q77unmvtxqw9kpydfjgkq87lnenhucmkty0fwj2d4qfdq3p59xc";
  };
}
