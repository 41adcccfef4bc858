//! An editor's compilations share syntax trees (`Session::parses`): a compilation
//! that reuses trees gives exactly what one that parses everything gives, and an
//! edited file is parsed again (its new text decides the result).

#[path = "support/repository.rs"]
mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use compiler::{Compilation, Options, Session, compile_session};
use support::homelab;

fn compile(
    overlay: BTreeMap<std::path::PathBuf, Arc<[u8]>>,
    parses: Option<&Arc<lang::ParseCache>>,
) -> Compilation {
    let session = Session {
        overlay: Arc::new(overlay),
        parses: parses.cloned(),
        ..Session::default()
    };
    compile_session(&homelab(), Options::inspect(), &session)
}

/// Every plan's bytes, and every diagnostic's code and message.
type Outcome = (BTreeMap<String, Vec<u8>>, Vec<(String, String)>);

fn outcome(compilation: &Compilation) -> Outcome {
    let plans = compilation
        .plans
        .iter()
        .map(|(node, plan)| (node.clone(), plan.to_json_bytes()))
        .collect();
    let diagnostics = compilation
        .diagnostics
        .iter()
        .map(|d| (d.code.to_string(), d.message.clone()))
        .collect();
    (plans, diagnostics)
}

#[test]
fn reused_trees_give_the_same_compilation() {
    let parses = Arc::new(lang::ParseCache::new());
    let fresh = outcome(&compile(BTreeMap::new(), None));
    assert!(!fresh.0.is_empty(), "the example has plans");
    let first = outcome(&compile(BTreeMap::new(), Some(&parses)));
    parses.sweep();
    let hits_before = parses.hits();
    let second = outcome(&compile(BTreeMap::new(), Some(&parses)));
    assert!(
        parses.hits() > hits_before,
        "the second compilation reused trees"
    );
    assert_eq!(first, fresh);
    assert_eq!(second, fresh);
}

#[test]
fn an_edited_file_is_parsed_again() {
    let parses = Arc::new(lang::ParseCache::new());
    let clean = outcome(&compile(BTreeMap::new(), Some(&parses)));
    assert!(
        clean.1.iter().all(|(code, _)| code != "E010"),
        "the example has no undefined variable: {:?}",
        clean.1
    );
    parses.sweep();
    // the same module, its text changed: an undefined variable where a value was
    let path = homelab().join("modules/web/module.nix");
    let text = std::fs::read_to_string(&path).expect("module");
    let edited = text.replacen("description = ", "description = undefinedName + ", 1);
    assert_ne!(edited, text, "the module has a description to break");
    let mut overlay = BTreeMap::new();
    overlay.insert(path, Arc::from(edited.as_bytes()));
    let broken = outcome(&compile(overlay, Some(&parses)));
    assert!(
        broken
            .1
            .iter()
            .any(|(code, message)| code == "E010" && message.contains("undefinedName")),
        "the edit is seen: {:?}",
        broken.1
    );
    parses.sweep();
    // and back: the original tree is parsed (or found) again, the error is gone
    assert_eq!(outcome(&compile(BTreeMap::new(), Some(&parses))), clean);
}
