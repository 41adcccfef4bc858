//! Resolution: "what runs here". A node's modules are its assignments plus
//! everything they transitively require. Cycles are found on the requirement graph
//! (petgraph) and reported whole, every edge with the place it is written.

use std::collections::{BTreeMap, BTreeSet};

use lang::codes;
use lang::diagnostic::did_you_mean;
use lang::value::EvalResult;
use lang::{Diagnostic, Machine, Span, Value};
use petgraph::graphmap::DiGraphMap;

use crate::inventory::Node;
use crate::module::{self, Absent, Module, ModuleSet};
use crate::source::literal_span;

/// A node's resolved modules, sorted by name, with the settings each receives.
pub struct Resolved {
    pub modules: Vec<String>,
    pub settings: BTreeMap<String, Value>,
    /// Module -> the modules whose `requires` name it, with where (for `meshc show`).
    pub required_by: BTreeMap<String, Vec<(String, Span)>>,
}

pub fn unknown_module(name: &str, span: Span, known: &[String], context: &str) -> Diagnostic {
    let help = did_you_mean(name, known.iter().map(String::as_str)).unwrap_or_else(|| {
        "modules live in `modules/NAME/module.nix` (a directory, not a link to one, holding a regular file `module.nix`) or the standard library; check the name"
            .to_string()
    });
    Diagnostic::error(
        codes::UNKNOWN_MODULE,
        format!("unknown module `{name}` {context}"),
    )
    .with_primary(span, "no module has this name")
    .with_help(help)
}

/// A module's settings on the node being resolved, or None after reporting why
/// they cannot be made.
pub type SettingsOf<'a> =
    dyn FnMut(&mut Machine, &Module, &mut Vec<Diagnostic>) -> EvalResult<Option<Value>> + 'a;

/// Resolves one node. `settings_of` gives a module's settings on this node.
pub fn resolve(
    machine: &mut Machine,
    node: &Node,
    modules: &ModuleSet,
    known: &[String],
    settings_of: &mut SettingsOf<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Option<Resolved>> {
    let errors_before = diagnostics.len();
    let mut graph: DiGraphMap<&str, Span> = DiGraphMap::new();
    let mut settings = BTreeMap::new();
    let mut required_by: BTreeMap<String, Vec<(String, Span)>> = BTreeMap::new();
    let mut work: Vec<&str> = Vec::new();
    for (name, span) in &node.modules {
        match modules.get_key_value(name.as_str()) {
            Some((key, _)) => {
                graph.add_node(key.as_str());
                work.push(key.as_str());
            }
            // failed to load (reported already), or not loaded yet (the worker
            // loads it and resolves the node again)
            None if modules.absent(name, known) != Absent::Unknown => {}
            None => diagnostics.push(unknown_module(
                name,
                *span,
                known,
                &format!("assigned to node `{}`", node.name),
            )),
        }
    }
    let mut visited: BTreeSet<&str> = BTreeSet::new();
    while let Some(current) = work.pop() {
        if !visited.insert(current) {
            continue;
        }
        let Some(module) = modules.get(current) else {
            continue;
        };
        let Some(module_settings) = settings_of(machine, module, diagnostics)? else {
            continue;
        };
        settings.insert(current.to_string(), module_settings.clone());
        let arguments = [("node", node.value.clone()), ("settings", module_settings)];
        let Some(requires) = module::field_value(machine, module, "requires", &arguments)? else {
            continue;
        };
        let field_span = module.field_span("requires");
        let Value::List(items) = requires else {
            diagnostics.push(
                Diagnostic::error(
                    codes::INVALID_MODULE_FIELD,
                    format!(
                        "`requires` of module `{current}` must be a list of module names, not {}",
                        requires.describe_type()
                    ),
                )
                .with_primary(field_span, "here")
                .with_help("write `requires = [ \"networking\" ];`"),
            );
            continue;
        };
        for item in items.iter() {
            let item = machine.force(item, field_span)?;
            let Value::String(required) = item else {
                diagnostics.push(
                    Diagnostic::error(
                        codes::INVALID_MODULE_FIELD,
                        format!(
                            "`requires` of module `{current}` must list module names, not {}",
                            item.describe_type()
                        ),
                    )
                    .with_primary(field_span, "here")
                    .with_help("write `requires = [ \"networking\" ];`"),
                );
                continue;
            };
            let required = String::from_utf8_lossy(&required).into_owned();
            let span = literal_span(machine, field_span, &required).unwrap_or(field_span);
            match modules.get_key_value(required.as_str()) {
                Some((key, _)) => {
                    graph.add_edge(current, key.as_str(), span);
                    required_by
                        .entry(key.clone())
                        .or_default()
                        .push((current.to_string(), span));
                    work.push(key.as_str());
                }
                None if modules.absent(&required, known) != Absent::Unknown => {}
                None => diagnostics.push(unknown_module(
                    &required,
                    span,
                    known,
                    &format!("required by module `{current}`"),
                )),
            }
        }
    }
    for cycle in cycles(&graph) {
        let names: Vec<String> = cycle
            .iter()
            .map(|(from, _, _)| format!("`{from}`"))
            .collect();
        let first = cycle.first().map(|(from, _, _)| *from).unwrap_or("");
        let help = match cycle.len() {
            1 => format!("a module cannot require itself: remove `{first}` from its own `requires`"),
            2 => "a module cannot require itself, even indirectly; move what both need into a third module they both require".to_string(),
            _ => "a module cannot require itself, even indirectly; remove one of these requirements, or move what the modules need from each other into a module they all require".to_string(),
        };
        let mut diagnostic = Diagnostic::error(
            codes::REQUIRES_CYCLE,
            format!(
                "modules require each other in a cycle: {} -> `{first}`",
                names.join(" -> ")
            ),
        )
        .with_help(help);
        for (index, (from, to, span)) in cycle.iter().enumerate() {
            let label = format!("`{from}` requires `{to}`");
            diagnostic = if index == 0 {
                diagnostic.with_primary(*span, label)
            } else {
                diagnostic.with_secondary(*span, label)
            };
        }
        diagnostics.push(diagnostic);
    }
    if diagnostics.len() > errors_before {
        return Ok(None);
    }
    let mut resolved: Vec<String> = visited.into_iter().map(str::to_string).collect();
    resolved.sort();
    Ok(Some(Resolved {
        modules: resolved,
        settings,
        required_by,
    }))
}

/// Every cycle of the graph, once: one per strongly connected component, as the
/// list of its edges in order, starting from the component's smallest name.
fn cycles<'a>(graph: &DiGraphMap<&'a str, Span>) -> Vec<Vec<(&'a str, &'a str, Span)>> {
    let mut found = Vec::new();
    for component in petgraph::algo::tarjan_scc(graph) {
        let Some(&start) = component.iter().min() else {
            continue;
        };
        let members: BTreeSet<&str> = component.iter().copied().collect();
        if component.len() == 1 && !graph.contains_edge(start, start) {
            continue;
        }
        // walk from the smallest member back to it inside the component
        let mut path: Vec<(&str, &str, Span)> = Vec::new();
        let mut on_path: BTreeSet<&str> = BTreeSet::new();
        if walk(graph, start, start, &members, &mut path, &mut on_path) {
            found.push(path);
        }
    }
    found.sort_by(|a, b| a.first().map(|e| e.0).cmp(&b.first().map(|e| e.0)));
    found
}

fn walk<'a>(
    graph: &DiGraphMap<&'a str, Span>,
    current: &'a str,
    target: &'a str,
    members: &BTreeSet<&'a str>,
    path: &mut Vec<(&'a str, &'a str, Span)>,
    on_path: &mut BTreeSet<&'a str>,
) -> bool {
    on_path.insert(current);
    let mut neighbours: Vec<&str> = graph
        .neighbors(current)
        .filter(|n| members.contains(n))
        .collect();
    neighbours.sort();
    for next in neighbours {
        let span = graph
            .edge_weight(current, next)
            .copied()
            .unwrap_or_default();
        if next == target {
            path.push((current, next, span));
            return true;
        }
        if on_path.contains(next) {
            continue;
        }
        path.push((current, next, span));
        if walk(graph, next, target, members, path, on_path) {
            return true;
        }
        path.pop();
    }
    false
}

/// E201's help: the node's `modules` with every module it sets but does not run
/// added (its modules kept, not replaced by the one), or the settings removed.
fn assign_help(node: &Node, absent: &[&str]) -> String {
    let words: Vec<String> = node
        .modules
        .iter()
        .map(|(name, _)| name.as_str())
        .chain(absent.iter().copied())
        .map(|name| format!("\"{name}\""))
        .collect();
    let them = match absent {
        [_] => "it",
        _ => "them",
    };
    format!(
        "to run {them} here, add {them} to the node's modules (`modules = [ {} ];`); otherwise remove these settings",
        words.join(" ")
    )
}

/// Settings a node gives to modules that do not run on it (E201), or to modules the
/// repository does not have (E101).
pub fn settings_for_absent_modules(
    name: &str,
    node: &Node,
    resolved: &Resolved,
    modules: &ModuleSet,
    known: &[String],
    diagnostics: &mut Vec<Diagnostic>,
) {
    // a module that failed to load is reported already; whether it runs here
    // cannot be told (one not loaded yet does not run here: every module the node
    // runs is)
    let said = |module_name: &String| {
        !(resolved.modules.contains(module_name)
            || (modules.get(module_name).is_none()
                && modules.absent_without_noting(module_name, known) == Absent::Failed))
    };
    let absent: Vec<&str> = node
        .settings
        .keys()
        .filter(|module_name| known.contains(*module_name) && said(module_name))
        .map(String::as_str)
        .collect();
    for (module_name, overrides) in &node.settings {
        if !said(module_name) {
            continue;
        }
        let diagnostic = if known.contains(module_name) {
            Diagnostic::error(
                codes::SETTING_FOR_ABSENT_MODULE,
                format!("node `{name}` sets settings of module `{module_name}`, which does not run on it"),
            )
            .with_primary(overrides.span, "settings given here")
            .with_help(assign_help(node, &absent))
        } else {
            unknown_module(
                module_name,
                overrides.span,
                known,
                &format!("in the settings of node `{name}`"),
            )
        };
        diagnostics.push(diagnostic);
    }
}
