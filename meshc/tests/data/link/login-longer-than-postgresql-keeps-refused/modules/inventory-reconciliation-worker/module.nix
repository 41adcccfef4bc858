{
  description = "a worker with a long name and a long consumer name";
  consumes.warehouse_inventory_ledger_database = { service = "postgres"; path = "/etc/worker-db"; };
}
