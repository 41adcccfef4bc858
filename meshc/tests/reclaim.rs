//! Reclaiming memory between nodes (`lang::Machine::reclaim`, called by the
//! compiler's workers) changes no plan: a fleet compiled with a reclaim pass
//! before nearly every node gives each node the plan it gets when it is the only
//! node of the fleet. The module keeps values across nodes whose parts are made
//! and forced while the first nodes compile (a module-level `let` table whose
//! entries have `let`s of their own, and a helper set made on first use), so a
//! pass that emptied a frame still reachable from a module would break the next
//! node.

use std::collections::BTreeMap;
use std::path::Path;

use compiler::{Compilation, Options, Session, compile_session};

const KEY: &str = "age17nkegg8q77unmvtxew9kpydfjgkq87lnenhucmkty0fwj2d4qfdq3p59xc";

const MODULE: &str = r#"{ mesh, ... }:
let
  # forced by the first node that reads it; each entry makes its own `let` frame
  table = builtins.genList (i: let square = i * i; label = "entry${toString i}"; in {
    inherit square label;
    twice = square * 2;
    describe = suffix: "${label}=${toString square}${suffix}";
  }) 8;
  helpers = let base = 40; offset = n: n + base; in { inherit offset; render = n: "port ${toString (offset n)}"; };
in
{
  description = "keeps values across nodes";
  settings.index = mesh.option { type = mesh.types.int; default = 0; description = "which entry"; };
  shapes = { node, settings, ... }:
    let
      entry = builtins.elemAt table settings.index;
      first = builtins.elemAt table 1;
      lines = map (e: e.describe ";") (builtins.filter (e: e.square <= entry.square) table);
    in [
      (mesh.file {
        path = "/etc/reclaim-${node.name}";
        content = builtins.concatStringsSep "\n" ([ (helpers.render entry.twice) first.label (toString first.twice) ] ++ lines) + "\n";
      })
    ];
}
"#;

fn repository(root: &Path, nodes: &[(&str, i64)]) {
    let mut inventory = String::from("{\n  nodes = {\n");
    for (name, index) in nodes {
        inventory.push_str(&format!(
            "    {name} = {{ key = \"{KEY}\"; modules = [ \"keeper\" ]; settings.keeper.index = {index}; }};\n"
        ));
    }
    inventory.push_str("  };\n}\n");
    std::fs::write(root.join("mesh.nix"), inventory).expect("write mesh.nix");
    let module = root.join("modules/keeper");
    std::fs::create_dir_all(&module).expect("make the module directory");
    std::fs::write(module.join("module.nix"), MODULE).expect("write the module");
}

fn plans(compilation: &Compilation) -> BTreeMap<String, Vec<u8>> {
    assert!(
        compilation.diagnostics.is_empty(),
        "{:?}",
        compilation
            .diagnostics
            .iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
    );
    compilation
        .plans
        .iter()
        .map(|(node, plan)| (node.clone(), plan.to_json_bytes()))
        .collect()
}

#[test]
fn plans_with_reclaim_between_nodes_equal_those_of_one_node_at_a_time() {
    let nodes = [
        ("n0", 3),
        ("n1", 5),
        ("n2", 3),
        ("n3", 7),
        ("n4", 0),
        ("n5", 6),
    ];
    let fleet = tempfile::tempdir().expect("temporary directory");
    repository(fleet.path(), &nodes);
    let options = Options {
        workers: Some(1),
        ..Options::inspect()
    };
    let session = Session {
        reclaim_batch: Some(1),
        ..Session::default()
    };
    let together = plans(&compile_session(fleet.path(), options, &session));
    assert_eq!(together.len(), nodes.len());
    for (name, index) in nodes {
        let alone = tempfile::tempdir().expect("temporary directory");
        repository(alone.path(), &[(name, index)]);
        let single = plans(&compile_session(alone.path(), options, &Session::default()));
        assert_eq!(
            String::from_utf8_lossy(&together[name]),
            String::from_utf8_lossy(&single[name]),
            "node {name}"
        );
    }
}
