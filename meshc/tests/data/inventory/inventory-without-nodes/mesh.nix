{
  registry = "registry.mesh.internal:5000";
}
