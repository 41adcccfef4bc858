{ mesh, ... }: {
  description = "a shop that needs a database";
  consumes.db = { service = "postgres"; path = "/run/shop-db"; };
}
