//! What a worker keeps from one node to the next, as the roots of
//! [`lang::Machine::reclaim`]: the inventory, the prelude, the loaded modules, the
//! cached default settings, and the first-half results of the nodes not finished
//! yet. Every value a worker uses again after a node must be reachable from these;
//! frames of recursive scopes that none reaches are emptied between nodes, so the
//! memory of node N is reused by node N+1 instead of kept to the end.

use std::collections::BTreeMap;

use lang::Value;

use crate::inventory::Inventory;
use crate::module::Module;
use crate::resolve::Resolved;
use crate::settings::DefaultsCache;

/// Everything the worker keeps, for one reclaim pass.
pub(crate) struct Kept<'a> {
    pub inventory_value: &'a Value,
    pub inventory: &'a Inventory,
    pub prelude: &'a Value,
    pub modules: &'a BTreeMap<String, Module>,
    pub defaults: &'a DefaultsCache,
}

impl Kept<'_> {
    /// The roots: what is kept, plus the results of the unfinished nodes.
    pub(crate) fn roots<'p>(
        &self,
        unfinished: impl Iterator<Item = (&'p Resolved, &'p BTreeMap<String, Value>)>,
    ) -> Vec<Value> {
        let mut roots = vec![self.inventory_value.clone(), self.prelude.clone()];
        for node in self.inventory.nodes.values() {
            roots.push(node.value.clone());
            for overrides in node.settings.values() {
                roots.extend(
                    overrides
                        .settings
                        .iter()
                        .map(|setting| setting.value.clone()),
                );
            }
        }
        for module in self.modules.values() {
            roots.push(Value::Attrs(module.record.clone()));
            roots.extend(
                module
                    .options
                    .values()
                    .filter_map(|option| option.default.clone()),
            );
        }
        roots.extend(self.defaults.values().cloned());
        for (resolved, collected) in unfinished {
            roots.extend(resolved.settings.values().cloned());
            roots.extend(collected.values().cloned());
        }
        roots
    }
}
