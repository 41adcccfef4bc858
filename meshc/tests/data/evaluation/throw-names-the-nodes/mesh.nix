let
  key = "age12y52ld3kt27sk7w3rpt4d6n0mpndj2v2u02z7q8ra8sjr0saepcshezt9w";
in
{
  nodes.app1 = { inherit key; modules = [ "app" ]; settings.app.port = 2000; };
  nodes.app2 = { inherit key; modules = [ "app" ]; };
  nodes.app3 = { inherit key; modules = [ "app" ]; settings.app.port = 2000; };
}
