//! The commands that compile the fleet without writing it let each node's plan go
//! as soon as they are done with it: `meshc check` at once, `meshc diff` when the
//! last build has the same plan. Their peak memory then grows with the largest node
//! (and with what changed), not with the fleet, as `meshc build`'s does. Peak
//! memory is the child's maximum resident set, as the kernel counts it
//! (`getrusage(RUSAGE_CHILDREN)`, read by `python3`: taking it from Rust would
//! need `unsafe`).

use std::path::Path;
use std::process::Command;

const MESHC: &str = env!("CARGO_BIN_EXE_meshc");

/// A module whose plan holds 100 files of 16 KiB, each made from the node's name.
const BIG: &str = r#"{ mesh, ... }:
{
  description = "A plan of a few megabytes per node";
  shapes = { node, ... }:
    let
      double = s: s + s;
      content = builtins.foldl' (s: _: double s) "${node.name}." (builtins.genList (i: i) 11);
    in
    [ (mesh.directory { path = "/srv/big"; }) ]
    ++ builtins.genList (i: mesh.file { path = "/srv/big/${toString i}"; inherit content; }) 100;
}
"#;

/// A repository of `nodes` nodes, each running `big`.
fn fleet(root: &Path, nodes: usize) {
    let key = "age12y52ld3kt27sk7w3rpt4d6n0mpndj2v2u02z7q8ra8sjr0saepcshezt9w";
    let entries: String = (0..nodes)
        .map(|index| format!("    n{index:04} = {{ key = \"{key}\"; modules = [ \"big\" ]; }};\n"))
        .collect();
    std::fs::create_dir_all(root.join("modules/big")).expect("a module directory");
    std::fs::write(root.join("modules/big/module.nix"), BIG).expect("the module");
    std::fs::write(
        root.join("mesh.nix"),
        format!("{{\n  nodes = {{\n{entries}  }};\n}}\n"),
    )
    .expect("the inventory");
}

/// The peak resident memory of `meshc ARGUMENTS --repo REPOSITORY`, in KiB, with
/// what it printed (standard output, then standard error): it must succeed.
fn peak(arguments: &[&str], repository: &Path) -> (u64, String) {
    let measure = "import resource, subprocess, sys\n\
        done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n\
        print(done.returncode)\n\
        print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n\
        print(done.stdout + done.stderr)\n";
    let output = Command::new("python3")
        .args(["-c", measure, MESHC])
        .args(arguments)
        .arg("--repo")
        .arg(repository)
        .env("NO_COLOR", "1")
        .output()
        .expect("python3 runs (scripts/test installs it)");
    let text = String::from_utf8_lossy(&output.stdout);
    let mut lines = text.lines();
    let status = lines.next().unwrap_or_default().to_string();
    let peak = lines.next().unwrap_or_default().to_string();
    let said: String = lines.collect::<Vec<_>>().join("\n");
    assert_eq!(status, "0", "meshc {arguments:?} succeeds: {said}");
    (peak.parse().expect("a peak in KiB"), said)
}

/// The peak of `meshc check` on a fleet of `nodes` nodes, after checking that it
/// found no error and counted every node.
fn check_peak(nodes: usize) -> u64 {
    let directory = tempfile::tempdir().expect("a temporary directory");
    fleet(directory.path(), nodes);
    let (peak, said) = peak(&["check"], directory.path());
    assert!(
        said.contains(&format!(
            "{nodes} node(s) compiled without errors, 0 error(s)"
        )),
        "meshc check counts the nodes whose plans it let go: {said}"
    );
    peak
}

/// The peak of `meshc diff` on a fleet of `nodes` nodes against its own build,
/// after checking that it found nothing changed.
fn diff_peak(nodes: usize) -> u64 {
    let directory = tempfile::tempdir().expect("a temporary directory");
    fleet(directory.path(), nodes);
    let built = Command::new(MESHC)
        .args(["build", "--repo"])
        .arg(directory.path())
        .output()
        .expect("meshc runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let (peak, said) = peak(&["diff"], directory.path());
    assert!(
        said.contains("No changes"),
        "meshc diff finds the build's own plans unchanged: {said}"
    );
    peak
}

/// `peak` of a fleet of 88 nodes is within 40 MiB of its peak of 8 nodes: each
/// node's plan is about 1.6 MB of file contents, so 80 more plans kept to the end
/// would be well over 100 MB more.
fn assert_flat(peak: fn(usize) -> u64, command: &str) {
    let small = peak(8);
    let large = peak(88);
    assert!(
        large < small + 40 * 1024,
        "meshc {command} of 88 nodes peaked at {large} KiB, of 8 nodes at {small} KiB: \
         the plans are kept to the end"
    );
}

#[test]
fn check_memory_does_not_grow_with_the_fleet() {
    assert_flat(check_peak, "check");
}

#[test]
fn diff_memory_grows_with_what_changed_not_with_the_fleet() {
    // every node is unchanged since its build
    assert_flat(diff_peak, "diff");
}
