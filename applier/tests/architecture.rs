//! The applier's place in the architecture, checked: it depends on `plan`, on
//! `problems` (how problems are reported, shared with `mesh-provision`) and, for
//! `mesh-apply --listen`, on `transport` (which itself depends on `plan` only), and on
//! no other crate of ours (never the language, the compiler, nom or petgraph); every
//! source file says what it is for; every error code has a book page.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

/// The platform we build for: `cargo metadata` resolves only its dependencies, so it
/// needs no crate that only another platform uses (those may not be downloaded). The
/// checks below therefore cover this platform's dependency tree.
fn host_triple() -> String {
    // the rustc of the toolchain running this test, not whichever is first on PATH
    let rustc = std::env::var_os("RUSTC")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO")).with_file_name("rustc"));
    let output = std::process::Command::new(&rustc)
        .arg("-vV")
        .output()
        .unwrap_or_else(|e| panic!("{} -vV: {e}", rustc.display()));
    assert!(output.status.success(), "{} -vV failed", rustc.display());
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_string()
}

fn metadata() -> serde_json::Value {
    let output = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &host_triple()])
        .current_dir(workspace())
        .output()
        .expect("cargo metadata");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("json")
}

/// Every package `package` depends on, transitively (normal dependencies only).
fn transitive_dependencies(metadata: &serde_json::Value, package: &str) -> Vec<String> {
    let packages = metadata["packages"].as_array().expect("packages");
    let id_of = |name: &str| -> String {
        packages
            .iter()
            .find(|candidate| candidate["name"] == name)
            .and_then(|candidate| candidate["id"].as_str())
            .expect("package")
            .to_string()
    };
    let nodes = metadata["resolve"]["nodes"].as_array().expect("nodes");
    let mut seen = vec![id_of(package)];
    let mut stack = seen.clone();
    while let Some(id) = stack.pop() {
        let node = nodes
            .iter()
            .find(|node| node["id"] == id.as_str())
            .expect("node");
        for dependency in node["deps"].as_array().expect("deps") {
            let normal = dependency["dep_kinds"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|kind| kind["kind"].is_null()));
            let dependency_id = dependency["pkg"].as_str().expect("pkg").to_string();
            if normal && !seen.contains(&dependency_id) {
                seen.push(dependency_id.clone());
                stack.push(dependency_id);
            }
        }
    }
    seen.iter()
        .filter_map(|id| {
            packages
                .iter()
                .find(|candidate| candidate["id"] == id.as_str())
        })
        .map(|package| package["name"].as_str().expect("name").to_string())
        .collect()
}

#[test]
fn applier_depends_on_plan_and_transport_and_no_other_crate_of_ours() {
    let metadata = metadata();
    let members: Vec<String> = metadata["workspace_members"]
        .as_array()
        .expect("members")
        .iter()
        .filter_map(|id| {
            metadata["packages"]
                .as_array()
                .expect("packages")
                .iter()
                .find(|package| package["id"] == *id)
                .and_then(|package| package["name"].as_str())
                .map(str::to_string)
        })
        .collect();
    let applier = transitive_dependencies(&metadata, "applier");
    assert!(applier.contains(&"plan".to_string()));
    // nothing of the language or the compiler, however indirectly (lapin, the AMQP
    // client, comes in through `transport` for `--listen`, and only that way: see below)
    for forbidden in ["lang", "compiler", "petgraph", "miette"] {
        assert!(
            !applier.contains(&forbidden.to_string()),
            "applier depends on {forbidden}"
        );
    }
    // nom only as the `age` crate's own header parser (and lapin's AMQP frame parser),
    // the AMQP client and its runtime only through `transport`, never directly
    let direct: Vec<String> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|package| package["name"] == "applier")
        .and_then(|package| package["dependencies"].as_array())
        .expect("dependencies")
        .iter()
        .filter(|dependency| dependency["kind"].is_null())
        .map(|dependency| dependency["name"].as_str().expect("name").to_string())
        .collect();
    for forbidden in ["nom", "petgraph", "lang", "compiler", "lapin", "tokio"] {
        assert!(
            !direct.contains(&forbidden.to_string()),
            "applier depends directly on {forbidden}"
        );
    }
    for member in &members {
        // `archive`, the artifacts' format, comes in through `transport` (the builder)
        if !["applier", "plan", "problems", "transport", "archive"].contains(&member.as_str()) {
            assert!(
                !applier.contains(member),
                "applier depends on the workspace crate {member}"
            );
        }
    }
    let transport = transitive_dependencies(&metadata, "transport");
    for member in &members {
        if !["transport", "plan", "problems", "archive"].contains(&member.as_str()) {
            assert!(
                !transport.contains(member),
                "transport depends on the workspace crate {member}"
            );
        }
    }
    let plan = transitive_dependencies(&metadata, "plan");
    for member in &members {
        // `problems`, the escaping plan text is printed with, depends on nothing
        if !["plan", "problems"].contains(&member.as_str()) {
            assert!(
                !plan.contains(member),
                "plan depends on the workspace crate {member}"
            );
        }
    }
}

fn rust_files(directory: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(directory).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn every_source_file_starts_by_saying_what_it_is_for() {
    let mut files = Vec::new();
    for crate_name in ["plan", "problems", "applier"] {
        for part in ["src", "tests", "benches"] {
            let directory = workspace().join(crate_name).join(part);
            if directory.is_dir() {
                rust_files(&directory, &mut files);
            }
        }
    }
    assert!(files.len() > 20);
    for path in files {
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(
            text.starts_with("//! "),
            "{} does not start with a `//!` line",
            path.display()
        );
        assert!(
            path.file_name().is_none_or(|name| name != "mod.rs"),
            "{}: use `foo.rs` beside `foo/`, not `mod.rs`",
            path.display()
        );
        let is_root = path.ends_with("src/lib.rs") || path.ends_with("src/main.rs");
        if is_root {
            assert!(
                text.contains("#![forbid(unsafe_code)]"),
                "{} does not forbid unsafe code",
                path.display()
            );
        }
    }
}

#[test]
fn each_shape_kind_has_a_module_of_its_name_in_plan_and_applier() {
    for kind in plan::Kind::ALL {
        for crate_name in ["plan", "applier"] {
            let path = workspace()
                .join(crate_name)
                .join("src")
                .join(format!("{}.rs", kind.name()));
            assert!(path.is_file(), "missing {}", path.display());
        }
    }
}

#[test]
fn every_error_code_has_a_book_page_and_codes_are_unique() {
    let mut numbers = Vec::new();
    for (code, number, title) in applier::codes::TABLE {
        assert_eq!(code.as_str(), *number);
        assert!(number.starts_with("E5") && number.len() == 4, "{number}");
        assert!(
            title.starts_with(|first: char| first.is_lowercase()),
            "{title}"
        );
        assert!(!numbers.contains(number), "{number} is used twice");
        numbers.push(number);
        let page = workspace()
            .join("book/src/errors")
            .join(format!("{number}.md"));
        let text = std::fs::read_to_string(&page)
            .unwrap_or_else(|_| panic!("no book page {}", page.display()));
        assert!(
            text.starts_with(&format!("# {number}: ")),
            "{} must start with `# {number}: `",
            page.display()
        );
    }
}

#[test]
fn applier_source_has_no_unwrap_or_ignored_results() {
    let mut files = Vec::new();
    rust_files(&workspace().join("applier/src"), &mut files);
    for path in files {
        let text = std::fs::read_to_string(&path).expect("read");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for forbidden in [
            ".unwrap()",
            ".expect(",
            "let _ =",
            "panic!(",
            "unreachable!(",
        ] {
            assert!(
                !code.contains(forbidden),
                "{} uses `{forbidden}`",
                path.display()
            );
        }
    }
}

/// Every filesystem operation on the host goes through `confined.rs` (issue 13): no other
/// source file opens, reads, writes, renames, removes or inspects a path by name, except
/// for the operator's own paths named here with why.
#[test]
fn the_host_is_touched_only_through_the_confined_layer() {
    // (file, exact text, why it may look a path up by name)
    let allowed: &[(&str, &str, &str)] = &[
        (
            "run.rs",
            "std::fs::File::open(path)",
            "the plan the operator names",
        ),
        (
            "run.rs",
            "use std::fs::File;",
            "the lock's opened descriptor",
        ),
        ("archive.rs", "use std::fs::File;", "the opened artifact"),
        (
            "container.rs",
            "Path::new(QUADLET).is_file()",
            "the running machine's Quadlet binary",
        ),
        (
            "host.rs",
            "directory.join(program).is_file()",
            "a tool on PATH",
        ),
        (
            // `mesh-apply --listen`'s flags are validated with the others
            "config.rs",
            "identity_path.is_file()",
            "the identity the operator names",
        ),
        (
            "config.rs",
            ".canonicalize()",
            "the `--root` the operator names",
        ),
        (
            "config.rs",
            "canonical.is_dir()",
            "the `--root` the operator names",
        ),
    ];
    let forbidden = [
        "std::fs::",
        "std::fs::{",
        "File::open(",
        "File::create(",
        "OpenOptions",
        "std::os::unix::fs::",
        "rustix::fs::open",
        "rustix::fs::mkdir",
        "rustix::fs::unlink",
        "rustix::fs::rename",
        "rustix::fs::stat",
        "rustix::fs::symlink",
        "rustix::fs::readlink",
        "rustix::fs::chown",
        "rustix::fs::chmod",
        ".is_file()",
        ".is_dir()",
        ".exists()",
        "canonicalize(",
    ];
    let mut files = Vec::new();
    rust_files(&workspace().join("applier/src"), &mut files);
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "confined.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read");
        let mut code = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or_default()
            .to_string();
        for (file, exact, _why) in allowed {
            if *file == name {
                code = code.replace(exact, "");
            }
        }
        for pattern in forbidden {
            assert!(
                !code.contains(pattern),
                "{} uses `{pattern}`: go through `confined.rs`",
                path.display()
            );
        }
    }
}
