{
  nodes.app1 = {
    key = "age17nkegg8q77unmvtxew9kpydfjgkq87lnenhucmkty0fwj2d4qfdq3p59xc";
    modules = [ "api" ];
  };
  nodes.app2 = {
    key = "age15dgha7sc2ts6vletprjyd3gzpcmgqm83pz2yzu4dh37tvnpgyqlqwtk57q";
    modules = [ "web" ];
  };
}
