{
  nodes.web1 = { key = "age12y52ld3kt27sk7w3rpt4d6n0mpndj2v2u02z7q8ra8sjr0saepcshezt9w"; modules = [ "app" ]; };
}
