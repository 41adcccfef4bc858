//! `mesh.lib`, the nixpkgs-style helpers of the prelude: its definitions
//! (`stdlib-modules/lib`) evaluated by `meshc eval` and by the real `nix-instantiate`
//! on the same cases must print the same (tests/lib/cases.nix, a case per function);
//! modules reach it as `mesh.lib`; the book lists every function. Needs nix-bin.

#[path = "support/repository.rs"]
mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use support::{MESHC, workspace};

/// Runs `program` and returns its standard output, failing loudly on an error.
fn output_of(program: &str, arguments: &[&str], directory: &Path) -> String {
    let output = Command::new(program)
        .args(arguments)
        .current_dir(directory)
        .output()
        .unwrap_or_else(|e| {
            panic!("{program} cannot run ({e}); these tests need nix-bin: apt-get install nix-bin")
        });
    assert!(
        output.status.success(),
        "{program} {arguments:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// A directory holding a copy of the library (`lib/`), the cases and `FILE`.
fn scratch(file: &str, text: &str) -> tempfile::TempDir {
    let directory = tempfile::tempdir().expect("temp dir");
    support::copy_tree(
        &workspace().join("stdlib-modules/lib"),
        &directory.path().join("lib"),
    );
    std::fs::copy(
        workspace().join("meshc/tests/lib/cases.nix"),
        directory.path().join("cases.nix"),
    )
    .expect("copy the cases");
    std::fs::write(directory.path().join(file), text).expect("write");
    directory
}

fn both(file: &str, text: &str, json: bool) -> (String, String) {
    let directory = scratch(file, text);
    let mut mesh = vec!["eval"];
    let mut nix = vec!["--eval", "--strict"];
    if json {
        mesh.push("--json");
        nix.push("--json");
    }
    mesh.push(file);
    nix.push(file);
    (
        output_of(MESHC, &mesh, directory.path()),
        output_of("nix-instantiate", &nix, directory.path()),
    )
}

#[test]
fn mesh_lib_agrees_with_nix_on_every_case() {
    let (mesh, nix) = both(
        "run.nix",
        "import ./cases.nix (import ./lib/default.nix)\n",
        false,
    );
    assert_eq!(
        mesh, nix,
        "meshc and nix-instantiate disagree on mesh.lib's cases"
    );
    assert!(
        mesh.len() > 2000,
        "the cases printed almost nothing: {mesh}"
    );
}

fn names(json: &str) -> BTreeSet<String> {
    serde_json::from_str::<Vec<String>>(json)
        .expect("a list of names")
        .into_iter()
        .collect()
}

/// The top-level functions of mesh.lib (the namespaces hold the same ones).
fn library_functions() -> BTreeSet<String> {
    let (mesh, nix) = both(
        "names.nix",
        "builtins.attrNames (builtins.removeAttrs (import ./lib/default.nix) \
         [ \"trivial\" \"lists\" \"strings\" \"attrsets\" ])\n",
        true,
    );
    assert_eq!(mesh, nix);
    names(&mesh)
}

#[test]
fn every_function_of_mesh_lib_has_a_case() {
    let (cases, _) = both(
        "case-names.nix",
        "builtins.attrNames (import ./cases.nix (import ./lib/default.nix))\n",
        true,
    );
    let cases = names(&cases);
    let missing: Vec<_> = library_functions().difference(&cases).cloned().collect();
    assert!(
        missing.is_empty(),
        "functions of mesh.lib without a case: {missing:?}"
    );
    for asked in [
        "optional",
        "optionals",
        "optionalAttrs",
        "optionalString",
        "mapAttrsToList",
        "filterAttrs",
        "mapAttrs'",
        "nameValuePair",
        "genAttrs",
        "recursiveUpdate",
        "attrByPath",
        "setAttrByPath",
        "hasPrefix",
        "hasSuffix",
        "removePrefix",
        "removeSuffix",
        "splitString",
        "concatMapStringsSep",
        "concatStrings",
        "escapeShellArg",
        "unique",
        "flatten",
        "range",
        "zipListsWith",
        "last",
        "init",
        "toUpper",
        "toLower",
        "boolToString",
    ] {
        assert!(
            cases.contains(asked),
            "issue 18 names `{asked}`: it needs a case"
        );
    }
}

#[test]
fn the_book_lists_every_function_of_mesh_lib() {
    let page =
        std::fs::read_to_string(workspace().join("book/src/lib.md")).expect("book/src/lib.md");
    let missing: Vec<_> = library_functions()
        .into_iter()
        .filter(|name| !page.contains(&format!("`{name}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "book/src/lib.md does not list {missing:?}"
    );
}

#[test]
fn a_module_reaches_the_helpers_as_mesh_lib() {
    let repository = tempfile::tempdir().expect("temp dir");
    let root = repository.path();
    std::fs::create_dir_all(root.join("modules/motd")).expect("mkdir");
    std::fs::write(
        root.join("mesh.nix"),
        r#"{
  nodes.app1 = {
    key = "age17nkegg8q77unmvtxew9kpydfjgkq87lnenhucmkty0fwj2d4qfdq3p59xc";
    modules = [ "motd" ];
    settings.motd.lines = [ "hello" "it's me" ];
  };
}
"#,
    )
    .expect("write the inventory");
    std::fs::write(
        root.join("modules/motd/module.nix"),
        r#"{ mesh, ... }:
let inherit (mesh) lib; in
{
  settings.lines = mesh.option { type = mesh.types.listOf mesh.types.str; default = [ ]; description = "lines"; };
  shapes = { settings, ... }: [
    (mesh.file {
      path = "/etc/motd";
      content = lib.concatMapStringsSep "\n" lib.escapeShellArg
        (lib.optionals (settings.lines != [ ]) (lib.unique (settings.lines ++ [ "hello" ])));
    })
  ];
}
"#,
    )
    .expect("write the module");
    let out = root.join("build");
    support::assert_built(&support::build(root, &out));
    let plan = std::fs::read_to_string(out.join("nodes/app1.json")).expect("the plan");
    assert!(
        plan.contains(r#""content":"hello\n'it'\\''s me'""#),
        "the file's content is not what mesh.lib makes: {plan}"
    );
}
