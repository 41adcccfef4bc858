//! Merging the workers' results into one compilation: sources by path, diagnostics
//! remapped to the merged sources and put in an order that does not depend on the
//! number of workers, repeats removed.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;

use lang::{Diagnostic, FileId, Label, Sources, codes};

use super::Compilation;
use super::workers::WorkerResult;
use crate::prelude;
use crate::repository::Repository;
use crate::secrets;
use crate::traces;

/// Merges the workers' results: sources by path, diagnostics remapped to the merged
/// sources, global ones first, then node by node in name order, repeats removed.
pub(super) fn merge(repository: &Repository, results: Vec<WorkerResult>) -> Compilation {
    let mut sources = Sources::new();
    let mut plans = BTreeMap::new();
    // every worker's nodes come in name order, the workers' in turn: collected
    // into maps at once (built from sorted runs) rather than inserted one by one
    let mut handed_sealed = Vec::new();
    let mut global = Vec::new();
    let mut per_node: Vec<(String, Vec<Diagnostic>)> = Vec::new();
    let mut not_compiled = BTreeSet::new();
    let mut traced = Vec::new();
    for result in results {
        handed_sealed.extend(result.handed);
        not_compiled.extend(result.skipped);
        let mapping = merge_sources(&mut sources, &result.sources);
        traced.extend(result.traces.remapped(&mapping));
        // a NixOS habit met while a node was compiled (`mesh.lib.mkIf` in its
        // `contributes`) gets the help it gets where a module file is loaded
        let remap = |mut diagnostic: Diagnostic| {
            remap_diagnostic(&mut diagnostic, &mapping);
            crate::module::with_habit_help(diagnostic)
        };
        global.extend(result.global.into_iter().map(remap));
        per_node.extend(
            result
                .per_node
                .into_iter()
                .filter(|(_, diagnostics)| !diagnostics.is_empty())
                .map(|(node, diagnostics)| (node, diagnostics.into_iter().map(remap).collect())),
        );
        plans.extend(result.plans);
    }
    let handed_sealed: BTreeMap<String, super::SealedTexts> = handed_sealed.into_iter().collect();
    let handed: BTreeSet<String> = handed_sealed.keys().cloned().collect();
    // a node is one worker's: its diagnostics are in one entry (a stable sort keeps
    // them in the order they were said)
    per_node.sort_by(|(a, _), (b, _)| a.cmp(b));
    let nodes_with_errors: BTreeSet<String> = per_node
        .iter()
        .filter(|(_, diagnostics)| lang::error_count(diagnostics) > 0)
        .map(|(node, _)| node.clone())
        .collect();
    sources.rename(|file| match &file.path {
        Some(path) => prelude::display_path(&path.display().to_string(), &repository.root),
        None => file.name.clone(),
    });
    let mut diagnostics: Vec<(Option<String>, Diagnostic)> = global
        .into_iter()
        .map(|diagnostic| (None, diagnostic))
        .collect();
    // by stage (E1xx resolution before E3xx links before E4xx shapes), then node by
    // node: a misspelt module on a provider (E101) comes before the consumer's E300
    // it causes, whichever node sorts first
    let mut by_node: Vec<(Option<String>, Diagnostic)> = per_node
        .into_iter()
        .flat_map(|(node, diagnostics)| {
            diagnostics
                .into_iter()
                .map(move |diagnostic| (Some(node.clone()), diagnostic))
        })
        .collect();
    by_node.sort_by_key(|(_, diagnostic)| diagnostic.code.as_str().as_bytes().get(1).copied());
    diagnostics.extend(by_node);
    // `mesh.lib` is made of the standard library's files joined with `//`: where
    // one of them defines "the set" (`<stdlib>/lib/lists.nix` for any name missing
    // from `mesh.lib`) says nothing the user can act on
    let lib_files = format!("{}/lib/", crate::stdlib::DISPLAY_PREFIX);
    for (_, diagnostic) in &mut diagnostics {
        diagnostic.secondary.retain(|label| {
            label.message != "the set is defined here"
                || !sources
                    .get(label.span.file)
                    .is_some_and(|file| file.name.starts_with(&lib_files))
        });
    }
    Compilation {
        root: repository.root.clone(),
        plans,
        handed,
        handed_sealed,
        diagnostics: without_repeats(diagnostics),
        sources,
        made: secrets::Made::default(),
        artifact_directories: BTreeMap::new(),
        keys: BTreeMap::new(),
        secrets: BTreeMap::new(),
        traces: traces::merge(traced),
        nodes_with_errors,
        not_compiled,
    }
}

fn merge_sources(into: &mut Sources, from: &Sources) -> HashMap<FileId, FileId> {
    // the first file of each path, as `Sources::find_path` finds it, without
    // scanning every file for every file
    let mut by_path: HashMap<PathBuf, FileId> = HashMap::new();
    for (id, file) in into.iter() {
        if let Some(path) = &file.path {
            by_path.entry(path.clone()).or_insert(id);
        }
    }
    let mut mapping = HashMap::new();
    for (id, file) in from.iter() {
        let existing = match &file.path {
            Some(path) => by_path.get(path).copied(),
            None => into
                .iter()
                .find(|(_, other)| other.path.is_none() && other.name == file.name)
                .map(|(id, _)| id),
        };
        let target = existing.unwrap_or_else(|| {
            let added = into.add(file.name.clone(), file.path.clone(), file.text.clone());
            if let Some(path) = &file.path {
                by_path.insert(path.clone(), added);
            }
            added
        });
        mapping.insert(id, target);
    }
    mapping
}

fn remap_diagnostic(diagnostic: &mut Diagnostic, mapping: &HashMap<FileId, FileId>) {
    let remap = |label: &mut Label| {
        if let Some(file) = mapping.get(&label.span.file) {
            label.span.file = *file;
        }
    };
    if let Some(primary) = &mut diagnostic.primary {
        remap(primary);
    }
    diagnostic.secondary.iter_mut().for_each(remap);
    diagnostic.trace.iter_mut().for_each(remap);
}

/// The diagnostics without repeats: a broken module is reported once, not once
/// for every node that runs it; a budget that ran out once, not once for every
/// node evaluated after. One said while a node was compiled names the nodes it was
/// said for, unless its message names them already: the same `throw` or `assert`
/// in a module fails for some nodes and not others, by their settings, and an
/// operator of fifty nodes must know whose to look at.
fn without_repeats(diagnostics: Vec<(Option<String>, Diagnostic)>) -> Vec<Diagnostic> {
    let mut kept: Vec<(Vec<String>, Diagnostic)> = Vec::new();
    let mut index = HashMap::new();
    let mut exhausted = HashSet::new();
    for (node, d) in diagnostics {
        let exhaustion = d.code == codes::BUDGET_EXCEEDED || d.code == codes::MEMORY_EXCEEDED;
        if exhaustion && !exhausted.insert(d.code) {
            continue;
        }
        let key = (
            d.code,
            d.severity.as_str(),
            d.message.clone(),
            d.primary.as_ref().map(|label| label.span),
            d.help.clone(),
        );
        let at = *index.entry(key).or_insert_with(|| {
            kept.push((Vec::new(), d));
            kept.len() - 1
        });
        // one node saying it twice (a `map` making two sets that are not shapes)
        // is one node: a node's diagnostics come together
        if let (Some(node), Some((nodes, _))) = (node, kept.get_mut(at))
            && nodes.last() != Some(&node)
        {
            nodes.push(node);
        }
    }
    kept.into_iter()
        .map(|(nodes, mut diagnostic)| {
            let named = nodes
                .iter()
                .any(|node| names_word(&diagnostic.message, node));
            if !nodes.is_empty() && !named {
                diagnostic.message.push_str(&for_nodes(&nodes));
            }
            diagnostic
        })
        .collect()
}

/// Does `text` hold `word` other than inside a longer name (`app1` in
/// "`nodes.app1.settings`" but not in "`app10`")?
fn names_word(text: &str, word: &str) -> bool {
    let part_of_name = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-';
    text.match_indices(word).any(|(start, _)| {
        let before = start.checked_sub(1).and_then(|at| text.as_bytes().get(at));
        let after = text.as_bytes().get(start + word.len());
        !before.is_some_and(|byte| part_of_name(*byte))
            && !after.is_some_and(|byte| part_of_name(*byte))
    })
}

/// ` (for node `a`)`, ` (for nodes `a` and `b`)`, ` (for node `a` and 11 others)`.
fn for_nodes(nodes: &[String]) -> String {
    match nodes {
        [] => String::new(),
        [one] => format!(" (for node `{one}`)"),
        [one, two] => format!(" (for nodes `{one}` and `{two}`)"),
        [one, two, three] => format!(" (for nodes `{one}`, `{two}` and `{three}`)"),
        [first, rest @ ..] => format!(" (for node `{first}` and {} others)", rest.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::{for_nodes, names_word, without_repeats};

    /// A diagnostic one node says twice and another once names the two nodes, each
    /// once (it said "for nodes `app1` and `app1`").
    #[test]
    fn a_node_saying_one_thing_twice_is_named_once() {
        let said = || lang::Diagnostic::error(lang::codes::NOT_A_SHAPE_LIST, "not a shape");
        let merged = without_repeats(vec![
            (Some("app1".to_string()), said()),
            (Some("app1".to_string()), said()),
            (Some("app2".to_string()), said()),
        ]);
        assert_eq!(merged.len(), 1);
        assert_eq!(
            merged[0].message,
            "not a shape (for nodes `app1` and `app2`)"
        );
    }

    #[test]
    fn a_node_is_named_once_and_only_where_the_message_does_not_name_it() {
        assert!(names_word("`nodes.app1.settings.port` is a string", "app1"));
        assert!(names_word("not declared on node `app1`", "app1"));
        assert!(!names_word("not declared on node `app10`", "app1"));
        assert!(!names_word("module `web-app1` fails", "app1"));
        let nodes: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        assert_eq!(for_nodes(&nodes[..1]), " (for node `a`)");
        assert_eq!(for_nodes(&nodes[..2]), " (for nodes `a` and `b`)");
        assert_eq!(for_nodes(&nodes[..3]), " (for nodes `a`, `b` and `c`)");
        assert_eq!(for_nodes(&nodes), " (for node `a` and 3 others)");
    }
}
