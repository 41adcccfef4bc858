//! Benchmark: a plan of 10,000 files across 100 directories, applied into a fresh root
//! (first apply), then again (no-op re-apply), against `tar -x` of the same files in
//! the same run. Prints the numbers; run with `cargo bench -p applier --bench apply`.
//! Goals: no-op re-apply under 0.5 s, first apply within 2x of `tar -x`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use plan::{Directory, File, Plan, Resource, Shape, Source};

const DIRECTORIES: usize = 100;
const FILES_PER_DIRECTORY: usize = 100;

fn content(directory_number: usize, file_number: usize) -> String {
    format!(
        "# generated for the apply benchmark\nkey_{directory_number}_{file_number} = {}\n",
        "v".repeat(64)
    )
}

fn build_plan() -> Plan {
    let source = Source {
        file: "modules/bench/module.nix".to_string(),
        line: 1,
        column: 1,
    };
    let mut shapes = Vec::with_capacity(DIRECTORIES * (FILES_PER_DIRECTORY + 1));
    for directory_number in 0..DIRECTORIES {
        let directory_path = format!("/srv/bench/d{directory_number:03}");
        shapes.push(Shape::new(
            Resource::Directory(Directory {
                path: directory_path.clone(),
                owner: "root".to_string(),
                group: "root".to_string(),
                mode: "0755".to_string(),
            }),
            "bench",
            source.clone(),
        ));
        for file_number in 0..FILES_PER_DIRECTORY {
            shapes.push(Shape::new(
                Resource::File(File {
                    path: format!("{directory_path}/f{file_number:03}.conf"),
                    content: Some(content(directory_number, file_number)),
                    content_base64: None,
                    owner: "root".to_string(),
                    group: "root".to_string(),
                    mode: "0644".to_string(),
                }),
                "bench",
                source.clone(),
            ));
        }
    }
    shapes.push(Shape::new(
        Resource::Directory(Directory {
            path: "/srv/bench".to_string(),
            owner: "root".to_string(),
            group: "root".to_string(),
            mode: "0755".to_string(),
        }),
        "bench",
        source,
    ));
    Plan::new("bench", shapes)
}

fn timed(what: &str, mut command: Command) -> Duration {
    let started = Instant::now();
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("cannot run {what}: {error}"));
    let elapsed = started.elapsed();
    assert!(
        output.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    elapsed
}

fn sync() {
    let status = Command::new("sync").status().expect("sync");
    assert!(status.success());
}

fn apply_command(plan_path: &Path, identity: &Path, root: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mesh-apply"));
    command
        .arg(plan_path)
        .arg("--identity")
        .arg(identity)
        .arg("--root")
        .arg(root)
        .args(["--format", "json"]);
    command
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing we need
    let scratch = tempfile::Builder::new()
        .prefix("mesh-bench")
        .tempdir()
        .expect("tempdir");
    let base = scratch.path();
    let identity = base.join("identity.txt");
    let status = Command::new("age-keygen")
        .arg("-o")
        .arg(&identity)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("age-keygen");
    assert!(status.success());

    let plan = build_plan();
    let plan_path = base.join("plan.json");
    std::fs::write(&plan_path, plan.to_json_bytes()).expect("write plan");

    // the same files as a tar archive, for `tar -x`
    let source_tree = base.join("source");
    for directory_number in 0..DIRECTORIES {
        let directory = source_tree.join(format!("srv/bench/d{directory_number:03}"));
        std::fs::create_dir_all(&directory).expect("mkdir");
        for file_number in 0..FILES_PER_DIRECTORY {
            std::fs::write(
                directory.join(format!("f{file_number:03}.conf")),
                content(directory_number, file_number),
            )
            .expect("write");
        }
    }
    let archive = base.join("files.tar");
    let mut create = Command::new("tar");
    create
        .arg("-cf")
        .arg(&archive)
        .arg("-C")
        .arg(&source_tree)
        .arg("srv");
    timed("tar -c", create);

    let mut results: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    let rounds = 3;
    for round in 0..rounds {
        sync();
        let tar_root = base.join(format!("tar-root-{round}"));
        std::fs::create_dir_all(&tar_root).expect("mkdir");
        let mut extract = Command::new("tar");
        extract.arg("-xf").arg(&archive).arg("-C").arg(&tar_root);
        let started = Instant::now();
        let output = extract.output().expect("tar -x");
        assert!(output.status.success());
        let tar_only = started.elapsed();
        sync();
        let tar_and_sync = started.elapsed();
        results.entry("tar -x").or_default().push(tar_only);
        results
            .entry("tar -x, then sync")
            .or_default()
            .push(tar_and_sync);

        sync();
        let apply_root = base.join(format!("apply-root-{round}"));
        std::fs::create_dir_all(apply_root.join("etc")).expect("mkdir");
        std::fs::create_dir_all(apply_root.join("srv")).expect("mkdir");
        std::fs::write(apply_root.join("etc/passwd"), "root:x:0:0::/root:/bin/sh\n")
            .expect("passwd");
        std::fs::write(apply_root.join("etc/group"), "root:x:0:\n").expect("group");
        let first = timed(
            "first apply",
            apply_command(&plan_path, &identity, &apply_root),
        );
        results
            .entry("mesh-apply, first apply (durable)")
            .or_default()
            .push(first);
        let again = timed(
            "no-op re-apply",
            apply_command(&plan_path, &identity, &apply_root),
        );
        results
            .entry("mesh-apply, no-op re-apply")
            .or_default()
            .push(again);
        std::fs::remove_dir_all(&tar_root).expect("cleanup");
        std::fs::remove_dir_all(&apply_root).expect("cleanup");
    }

    println!(
        "apply benchmark: {} files in {DIRECTORIES} directories, {rounds} rounds, median of each",
        DIRECTORIES * FILES_PER_DIRECTORY
    );
    let median = |durations: &Vec<Duration>| {
        let mut sorted = durations.clone();
        sorted.sort();
        sorted.get(sorted.len() / 2).copied().unwrap_or_default()
    };
    for (what, durations) in &results {
        let all: Vec<String> = durations
            .iter()
            .map(|duration| format!("{:.3}", duration.as_secs_f64()))
            .collect();
        println!(
            "  {what:<36} {:>7.3} s   (rounds: {})",
            median(durations).as_secs_f64(),
            all.join(", ")
        );
    }
    let first = median(&results["mesh-apply, first apply (durable)"]).as_secs_f64();
    let tar = median(&results["tar -x"]).as_secs_f64();
    let tar_sync = median(&results["tar -x, then sync"]).as_secs_f64();
    let noop = median(&results["mesh-apply, no-op re-apply"]).as_secs_f64();
    println!(
        "  first apply / tar -x           = {:.2}x (goal: at most 2x)",
        first / tar
    );
    println!(
        "  first apply / (tar -x + sync)  = {:.2}x",
        first / tar_sync
    );
    println!("  no-op re-apply                 = {noop:.3} s (goal: under 0.5 s)");
}
