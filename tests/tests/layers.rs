//! The layers of ARCHITECTURE.md, read from `cargo metadata`: `problems` (how the
//! binaries report) depends on no crate at all, `lang` on no crate of ours, `plan` on
//! `problems` only, `archive` on `plan`, `transport` on `plan` and `archive`, `applier`
//! on those and `transport` (for `--listen`), and neither ever on the language, the
//! compiler, nom or petgraph; `mesh-provision` on `problems` alone; `compiler` is a
//! library that
//! knows neither the terminal, the command line, the editor's protocol, the transport
//! nor the allocator (the `meshc` crate chooses those). Also the edge that tools read: `meshc check
//! --format json` carries every field of a diagnostic. Nothing here builds plans.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use tests::workspace_root;

fn cargo() -> Command {
    let mut command = Command::new(env!("CARGO"));
    command.current_dir(workspace_root());
    command
}

/// The dependency graph: package name -> names of its dependencies of the
/// given kinds (`None` is a normal dependency, else "build" or "dev").
struct Graph {
    workspace: BTreeSet<String>,
    edges: BTreeMap<String, Vec<(String, Option<String>)>>,
}

impl Graph {
    fn read() -> Graph {
        let output = cargo()
            .args(["metadata", "--format-version", "1"])
            .output()
            .expect("cargo metadata runs");
        assert!(
            output.status.success(),
            "cargo metadata failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let metadata: Value = serde_json::from_slice(&output.stdout).expect("metadata is JSON");
        let names: BTreeMap<&str, &str> = metadata["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .map(|package| {
                (
                    package["id"].as_str().expect("id"),
                    package["name"].as_str().expect("name"),
                )
            })
            .collect();
        let workspace = metadata["workspace_members"]
            .as_array()
            .expect("workspace members")
            .iter()
            .map(|id| names[id.as_str().expect("id")].to_string())
            .collect();
        let mut edges = BTreeMap::new();
        for node in metadata["resolve"]["nodes"].as_array().expect("resolve") {
            let name = names[node["id"].as_str().expect("id")].to_string();
            let mut dependencies = Vec::new();
            for dependency in node["deps"].as_array().expect("deps") {
                let dependency_name = names[dependency["pkg"].as_str().expect("pkg")].to_string();
                for kind in dependency["dep_kinds"].as_array().expect("dep_kinds") {
                    let kind = kind["kind"].as_str().map(str::to_string);
                    dependencies.push((dependency_name.clone(), kind));
                }
            }
            edges.insert(name, dependencies);
        }
        Graph { workspace, edges }
    }

    /// Every package `root` reaches through dependencies of the given kinds.
    fn reachable(&self, root: &str, kinds: &[Option<&str>]) -> BTreeSet<String> {
        assert!(self.edges.contains_key(root), "no package `{root}`");
        let mut seen = BTreeSet::new();
        let mut work = vec![root.to_string()];
        while let Some(current) = work.pop() {
            for (dependency, kind) in self.edges.get(&current).into_iter().flatten() {
                if kinds.contains(&kind.as_deref()) && seen.insert(dependency.clone()) {
                    work.push(dependency.clone());
                }
            }
        }
        seen
    }

    fn ours(&self, packages: &BTreeSet<String>) -> BTreeSet<String> {
        packages
            .iter()
            .filter(|name| self.workspace.contains(*name))
            .cloned()
            .collect()
    }
}

const NORMAL: &[Option<&str>] = &[None];
const NORMAL_AND_BUILD: &[Option<&str>] = &[None, Some("build")];

#[test]
fn the_workspace_has_the_crates_the_layers_name() {
    let graph = Graph::read();
    for name in [
        "lang",
        "compiler",
        "meshc",
        "plan",
        "archive",
        "applier",
        "transport",
        "provisioner",
        "problems",
        "tests",
    ] {
        assert!(
            graph.workspace.contains(name),
            "no workspace crate `{name}`"
        );
    }
}

/// The reporting mechanism both binaries share (the code registry's macro, the coded
/// problem and how it is printed, the escaping) is a leaf: no crate of ours, and none
/// of anyone's, so that sharing it brings nothing into the provisioner or `plan`.
#[test]
fn problems_depends_on_no_crate_at_all() {
    let graph = Graph::read();
    let dependencies: Vec<&(String, Option<String>)> =
        graph.edges.get("problems").into_iter().flatten().collect();
    assert!(
        dependencies.is_empty(),
        "problems depends on {dependencies:?}"
    );
}

/// The plan vocabulary: of ours, only the escaping it prints plan text with.
#[test]
fn plan_depends_on_problems_only() {
    let graph = Graph::read();
    let ours = graph.ours(&graph.reachable("plan", NORMAL_AND_BUILD));
    assert_eq!(
        ours,
        BTreeSet::from(["problems".to_string()]),
        "plan's crates of ours"
    );
}

/// `mesh-provision` runs beside a database with the power to create logins: it reads
/// a JSON file, and of ours it shares only how problems are reported, by every kind
/// of dependency (its tests reimplement what they need rather than borrow ours).
#[test]
fn provisioner_depends_on_problems_only() {
    let graph = Graph::read();
    let problems = BTreeSet::from(["problems".to_string()]);
    let direct: BTreeSet<String> = graph.edges["provisioner"]
        .iter()
        .map(|(name, _)| name.clone())
        .collect();
    assert_eq!(
        graph.ours(&direct),
        problems,
        "provisioner's crates of ours, dev included"
    );
    let ours = graph.ours(&graph.reachable("provisioner", NORMAL_AND_BUILD));
    assert_eq!(ours, problems, "provisioner's crates of ours");
}

#[test]
fn lang_depends_on_no_crate_of_ours() {
    let graph = Graph::read();
    let ours = graph.ours(&graph.reachable("lang", NORMAL_AND_BUILD));
    assert!(ours.is_empty(), "lang depends on {ours:?}");
}

/// Crates outside the workspace that may bring a forbidden crate into `applier` or
/// `transport`, and why. `age` (the sealing format DESIGN.md prescribes) parses its
/// file header with nom, and lapin's `amq-protocol` parses AMQP frames with it; those
/// are the wire formats' parsers, not the language's, and the only ways in.
const ALLOWED_BRINGERS: &[(&str, &[&str])] = &[(
    "nom",
    &["age", "age-core", "amq-protocol", "amq-protocol-types"],
)];

/// Asserts that `root`'s crates of ours are exactly `expected` and that nothing in
/// its tree brings the language, the compiler, nom or petgraph (but the allowed).
fn assert_layer(root: &str, expected: &[&str]) {
    let graph = Graph::read();
    let reachable = graph.reachable(root, NORMAL);
    let ours = graph.ours(&reachable);
    assert_eq!(
        ours,
        expected.iter().map(|name| name.to_string()).collect(),
        "{root}'s crates of ours"
    );
    for forbidden in ["lang", "compiler", "nom", "petgraph"] {
        let allowed: &[&str] = ALLOWED_BRINGERS
            .iter()
            .find(|(name, _)| *name == forbidden)
            .map(|(_, bringers)| *bringers)
            .unwrap_or(&[]);
        // the packages of root's tree (and root itself) that depend on it directly
        let mut tree = reachable.clone();
        tree.insert(root.to_string());
        let bringers: Vec<&String> = tree
            .iter()
            .filter(|package| {
                graph
                    .edges
                    .get(*package)
                    .into_iter()
                    .flatten()
                    .any(|(name, kind)| name == forbidden && kind.is_none())
            })
            .filter(|package| !allowed.contains(&package.as_str()))
            .collect();
        assert!(
            bringers.is_empty(),
            "{root} depends on `{forbidden}` through {bringers:?}"
        );
    }
}

/// The applier runs as root: the plan vocabulary (and `problems` with it, which it
/// also prints its own problems with) and, for `mesh-apply --listen`, the transport;
/// nothing that knows the language or the compiler.
#[test]
fn applier_depends_on_plan_and_transport_only() {
    assert_layer("applier", &["archive", "plan", "problems", "transport"]);
}

/// The transport carries plans and builds without knowing how plans are made: a
/// change to module resolution cannot reach it (`problems` comes with `plan`).
#[test]
fn transport_depends_on_plan_only() {
    assert_layer("transport", &["archive", "plan", "problems"]);
}

/// The reproducible archive format is shared by the compiler and the builder and
/// belongs to neither.
#[test]
fn archive_depends_on_plan_only() {
    assert_layer("archive", &["plan", "problems"]);
}

/// rust-analyzer's split of `ide` from its binary: the compiler is a library; the
/// terminal (miette), the command line (clap), the editor's protocol, the transport
/// and the allocator are chosen by the `meshc` crate.
#[test]
fn compiler_is_a_library_without_terminal_protocol_transport_or_allocator() {
    let graph = Graph::read();
    let reachable = graph.reachable("compiler", NORMAL_AND_BUILD);
    assert_eq!(
        graph.ours(&reachable),
        ["archive", "lang", "plan", "problems"]
            .iter()
            .map(|name| name.to_string())
            .collect(),
        "compiler's crates of ours"
    );
    let direct: BTreeSet<&str> = graph.edges["compiler"]
        .iter()
        .filter(|(_, kind)| kind.is_none())
        .map(|(name, _)| name.as_str())
        .collect();
    for forbidden in [
        "transport",
        "miette",
        "clap",
        "lexopt",
        "lsp-server",
        "lsp-types",
        "mimalloc",
    ] {
        assert!(
            !direct.contains(forbidden),
            "compiler depends on `{forbidden}`"
        );
    }
}

/// The `meshc` binary, built (or found up to date) by cargo in this test's profile.
fn meshc() -> PathBuf {
    tests::binary("meshc", "meshc")
}

#[test]
fn meshc_check_json_carries_every_field_of_a_diagnostic() {
    let repository =
        workspace_root().join("meshc/tests/data/settings/override-wrong-type-shows-both-spans");
    let output = Command::new(meshc())
        .args(["check", "--format", "json", "--repo"])
        .arg(&repository)
        .output()
        .expect("meshc runs");
    assert_eq!(output.status.code(), Some(1), "an error exits with 1");
    let diagnostics: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    let diagnostics = diagnostics.as_array().expect("a JSON array of diagnostics");
    assert!(!diagnostics.is_empty());
    for diagnostic in diagnostics {
        for field in ["code", "severity", "message", "primary", "labels", "help"] {
            assert!(
                diagnostic.get(field).is_some(),
                "no `{field}` in {diagnostic}"
            );
        }
    }
    let diagnostic = diagnostics
        .iter()
        .find(|d| d["code"] == "E202")
        .expect("the fixture's E202");
    assert_eq!(diagnostic["severity"], "error");
    assert!(
        diagnostic["message"]
            .as_str()
            .expect("message")
            .contains("`nodes.app1.settings.web.port`"),
        "{diagnostic}"
    );
    assert!(
        diagnostic["help"]
            .as_str()
            .expect("help")
            .contains("a port"),
        "{diagnostic}"
    );

    // the primary span: `port` in `settings.web.port = "80";`, line 5, columns 18-22
    let primary = &diagnostic["primary"];
    assert_eq!(primary["file"], "mesh.nix", "{primary}");
    assert_eq!(
        (
            &primary["start_line"],
            &primary["start_column"],
            &primary["end_line"],
            &primary["end_column"]
        ),
        (
            &Value::from(5),
            &Value::from(18),
            &Value::from(5),
            &Value::from(22)
        ),
        "{primary}"
    );
    let inventory = std::fs::read(repository.join("mesh.nix")).expect("mesh.nix");
    let start = primary["start"].as_u64().expect("byte start") as usize;
    let end = primary["end"].as_u64().expect("byte end") as usize;
    assert_eq!(&inventory[start..end], b"port", "{primary}");

    // the secondary label: where the setting is declared
    let labels = diagnostic["labels"].as_array().expect("labels");
    let declared = labels
        .iter()
        .find(|label| label["file"] == "modules/web/module.nix")
        .unwrap_or_else(|| panic!("no label in the module: {labels:?}"));
    assert_eq!(declared["start_line"], 4, "{declared}");
    for field in [
        "start",
        "end",
        "start_line",
        "start_column",
        "end_line",
        "end_column",
        "message",
    ] {
        assert!(declared.get(field).is_some(), "no `{field}` in {declared}");
    }
}
