//! "Bring your own nixpkgs `lib`": nixpkgs' own `lib/tests/misc.nix`, one test at a
//! time under `meshc eval` and under `nix-instantiate` (Nix 2.8), each test's `expr`
//! compared with its `expected` inside mesh and its printed value with Nix's. Needs a
//! clone of nixpkgs' lib (github.com/nix-community/nixpkgs.lib) named by
//! `MESH_NIXPKGS_LIB`, so that test is ignored in the suite (it is reported as ignored,
//! never as passed) and `scripts/nixpkgs-lib-tests` runs it. What the last run found is recorded in
//! `tests/nixpkgs-lib/misc-outcomes.txt`, and the book's list of the tests that use
//! what the language leaves out is checked against that record on every run.

#[path = "support/repository.rs"]
mod support;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use support::{MESHC, workspace};

/// Where the outcomes of the last run are recorded.
const RECORD: &str = "meshc/tests/nixpkgs-lib/misc-outcomes.txt";
/// How long one test may take under `nix-instantiate` (meshc has its step budget).
const NIX_SECONDS: &str = "120";

/// What became of one test of misc.nix.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    /// `expr == expected` in mesh, and Nix printed the same value (or, when it
    /// cannot evaluate the test, the reason why, Nix 2.8 being older than the lib).
    Pass { nix: Option<String> },
    /// The test reaches for a part of Nix the language leaves out.
    LeftOut { feature: String },
    /// A disagreement: with `expected`, with Nix, or an error mesh should not give.
    Fail { reason: String },
}

impl fmt::Display for Outcome {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Pass { nix: None } => write!(formatter, "pass"),
            Outcome::Pass { nix: Some(why) } => {
                write!(formatter, "pass\tNix 2.8 cannot evaluate it: {why}")
            }
            Outcome::LeftOut { feature } => write!(formatter, "left-out\t{feature}"),
            Outcome::Fail { reason } => write!(formatter, "fail\t{reason}"),
        }
    }
}

/// A string as a Nix string literal (test names are arbitrary attribute names).
fn nix_string(text: &str) -> String {
    let mut literal = String::from("\"");
    for character in text.chars() {
        match character {
            '"' | '\\' | '$' => {
                literal.push('\\');
                literal.push(character);
            }
            '\n' => literal.push_str("\\n"),
            _ => literal.push(character),
        }
    }
    literal.push('"');
    literal
}

/// The nixpkgs lib copied into `scratch` as the root of the evaluation, with
/// `lib/tests/misc-tests.nix`: misc.nix whose test set is returned instead of being
/// passed to `runTests`, so each test can be evaluated alone.
fn prepare(clone: &Path, scratch: &Path) {
    let lib = clone.join("lib");
    assert!(
        lib.join("tests/misc.nix").is_file(),
        "MESH_NIXPKGS_LIB={} has no lib/tests/misc.nix: point it at a clone of nixpkgs.lib (or of nixpkgs)",
        clone.display()
    );
    support::copy_tree(&lib, &scratch.join("lib"));
    let misc = std::fs::read_to_string(lib.join("tests/misc.nix")).expect("misc.nix is UTF-8");
    let call = "\nrunTests {\n";
    assert_eq!(
        misc.matches(call).count(),
        1,
        "misc.nix no longer ends in one `runTests {{ ... }}` at the start of a line: the runner must learn its new shape"
    );
    std::fs::write(
        scratch.join("lib/tests/misc-tests.nix"),
        misc.replacen(call, "\n{\n", 1),
    )
    .expect("write misc-tests.nix");
}

/// The names `runTests` would run: attributes whose name starts with `test`.
fn test_names(scratch: &Path) -> Vec<String> {
    let output = Command::new(MESHC)
        .args(["eval", "--json", "--color", "never", "--root"])
        .arg(scratch)
        .args([
            "--expr",
            "builtins.attrNames (import ./lib/tests/misc-tests.nix)",
        ])
        .current_dir(scratch)
        .output()
        .expect("meshc runs");
    assert!(
        output.status.success(),
        "meshc cannot list misc.nix's tests:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let names: Vec<String> = serde_json::from_slice(&output.stdout).expect("a list of names");
    names
        .into_iter()
        .filter(|name| name.starts_with("test"))
        .collect()
}

/// The part of Nix a mesh diagnostic says the language leaves out, if it says so.
fn left_out_feature(code: &str, message: &str) -> Option<String> {
    let feature = match code {
        "E034" => "paths outside the repository",
        "E037" => "the store (a path interpolated into a string is copied to it)",
        "E036" => {
            let builtin = message
                .split('`')
                .nth(1)
                .and_then(|quoted| quoted.strip_prefix("builtins."))?;
            match builtin {
                "derivation" | "derivationStrict" => "derivations",
                "storeDir" | "storePath" | "path" | "toFile" | "filterSource" => {
                    return Some(format!("the store (`builtins.{builtin}`)"));
                }
                "getEnv" => "the environment (`builtins.getEnv`)",
                _ => return Some(format!("`builtins.{builtin}`")),
            }
        }
        _ => return None,
    };
    Some(feature.to_string())
}

/// The code (first line) and message (the `×` line) of meshc's first diagnostic.
fn first_diagnostic(stderr: &str) -> (String, String) {
    let code = stderr.lines().next().unwrap_or_default().trim().to_string();
    let message = stderr
        .lines()
        .find_map(|line| line.trim_start().strip_prefix("× "))
        .unwrap_or_default()
        .to_string();
    (code, message)
}

/// The first line of Nix's error, without the file positions that follow it.
fn nix_error(stderr: &str) -> String {
    stderr
        .lines()
        .find(|line| line.starts_with("error:"))
        .unwrap_or("no error message")
        .trim()
        .to_string()
}

fn run_test(scratch: &Path, index: usize, name: &str) -> Outcome {
    let file = scratch.join(format!("run/{index}.nix"));
    std::fs::write(
        &file,
        format!(
            "let test = (import ../lib/tests/misc-tests.nix).{}; in\n{{ equal = test.expr == test.expected; expr = test.expr; }}\n",
            nix_string(name)
        ),
    )
    .expect("write the test's file");
    let mesh = Command::new(MESHC)
        .args(["eval", "--color", "never", "--root"])
        .arg(scratch)
        .arg(&file)
        .output()
        .expect("meshc runs");
    let nix = Command::new("timeout")
        .args([NIX_SECONDS, "nix-instantiate", "--eval", "--strict"])
        .arg(&file)
        .output()
        .expect("timeout runs");
    assert_ne!(
        nix.status.code(),
        Some(127),
        "nix-instantiate cannot run: this test needs nix-bin (apt-get install nix-bin)"
    );
    let nix_printed = nix
        .status
        .success()
        .then(|| String::from_utf8_lossy(&nix.stdout).into_owned());
    if !mesh.status.success() {
        let (code, message) = first_diagnostic(&String::from_utf8_lossy(&mesh.stderr));
        return match left_out_feature(&code, &message) {
            Some(feature) => Outcome::LeftOut { feature },
            None => Outcome::Fail {
                reason: format!("meshc: {code} {message}"),
            },
        };
    }
    let printed = String::from_utf8_lossy(&mesh.stdout).into_owned();
    if !printed.starts_with("{ equal = true; ") {
        return Outcome::Fail {
            reason: "`expr` is not equal to `expected` in mesh".to_string(),
        };
    }
    match nix_printed {
        Some(nix_printed) if nix_printed == printed => Outcome::Pass { nix: None },
        Some(nix_printed) => Outcome::Fail {
            reason: format!(
                "meshc prints {} but nix-instantiate {}",
                printed.trim_end(),
                nix_printed.trim_end()
            ),
        },
        None => Outcome::Pass {
            nix: Some(nix_error(&String::from_utf8_lossy(&nix.stderr))),
        },
    }
}

/// Every test of misc.nix, by name, on two workers.
fn run_all(clone: &Path) -> BTreeMap<String, Outcome> {
    let scratch = tempfile::tempdir().expect("temp dir");
    prepare(clone, scratch.path());
    std::fs::create_dir_all(scratch.path().join("run")).expect("mkdir");
    let names = test_names(scratch.path());
    assert!(names.len() > 300, "misc.nix has only {} tests", names.len());
    let next = AtomicUsize::new(0);
    let outcomes = Mutex::new(BTreeMap::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(name) = names.get(index) else { break };
                    let outcome = run_test(scratch.path(), index, name);
                    eprintln!("{name}\t{outcome}");
                    outcomes
                        .lock()
                        .expect("no worker panicked")
                        .insert(name.clone(), outcome);
                }
            });
        }
    });
    outcomes.into_inner().expect("no worker panicked")
}

/// The commit of the clone, for the record's header.
fn commit_of(clone: &Path) -> String {
    Command::new("git")
        .arg("-C")
        .arg(clone)
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
        .unwrap_or_else(|| "(not a git checkout)".to_string())
}

fn record_text(commit: &str, outcomes: &BTreeMap<String, Outcome>) -> String {
    let mut text = format!(
        "# @generated by `scripts/nixpkgs-lib-tests --write CLONE` (meshc/tests/nixpkgs_lib.rs)\n\
         # from nixpkgs lib {commit}: each test of lib/tests/misc.nix, its outcome, why\n"
    );
    for (name, outcome) in outcomes {
        text.push_str(&format!("{name}\t{outcome}\n"));
    }
    text
}

/// The recorded outcomes: test name -> (kind, detail).
fn recorded() -> BTreeMap<String, (String, String)> {
    let text = std::fs::read_to_string(workspace().join(RECORD)).expect("the record exists");
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let mut fields = line.splitn(3, '\t');
            let name = fields.next().unwrap_or_default().to_string();
            let kind = fields.next().unwrap_or_default().to_string();
            let detail = fields.next().unwrap_or_default().to_string();
            (name, (kind, detail))
        })
        .collect()
}

#[test]
#[ignore = "needs a clone of nixpkgs.lib named by MESH_NIXPKGS_LIB: scripts/nixpkgs-lib-tests CLONE runs it"]
fn nixpkgs_lib_misc_tests_agree_with_nix_but_for_what_the_language_leaves_out() {
    let clone = std::env::var_os("MESH_NIXPKGS_LIB")
        .map(PathBuf::from)
        .expect("MESH_NIXPKGS_LIB is not set: point it at a clone of nixpkgs.lib (scripts/nixpkgs-lib-tests CLONE)");
    let outcomes = run_all(&clone);
    let text = record_text(&commit_of(&clone), &outcomes);
    if std::env::var_os("MESH_NIXPKGS_LIB_WRITE").is_some() {
        std::fs::write(workspace().join(RECORD), &text).expect("write the record");
    }
    let failures: Vec<String> = outcomes
        .iter()
        .filter(|(_, outcome)| matches!(outcome, Outcome::Fail { .. }))
        .map(|(name, outcome)| format!("{name}: {outcome}"))
        .collect();
    assert!(
        failures.is_empty(),
        "misc.nix tests mesh gets wrong:\n{}",
        failures.join("\n")
    );
    let recorded_text = std::fs::read_to_string(workspace().join(RECORD)).expect("the record");
    let body = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|line| !line.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        body(&recorded_text),
        body(&text),
        "the outcomes differ from {RECORD} (recorded from another nixpkgs lib?); \
         if the change is right, rerun with `scripts/nixpkgs-lib-tests --write CLONE` and update book/src/lib.md"
    );
}

/// The sentence of the book that gives the counts.
fn counts_sentence(record: &BTreeMap<String, (String, String)>) -> String {
    let count = |kind: &str| record.values().filter(|(k, _)| k == kind).count();
    format!(
        "Of its {} tests, {} pass, {} fail and {} use what the language leaves out",
        record.len(),
        count("pass"),
        count("fail"),
        count("left-out")
    )
}

#[test]
fn the_book_lists_the_misc_nix_tests_that_use_left_out_features() {
    let record = recorded();
    assert!(record.len() > 300, "{RECORD} holds {} tests", record.len());
    assert!(
        record
            .values()
            .all(|(kind, _)| ["pass", "fail", "left-out"].contains(&kind.as_str())),
        "{RECORD} has an outcome that is not pass, fail or left-out"
    );
    let page =
        std::fs::read_to_string(workspace().join("book/src/lib.md")).expect("book/src/lib.md");
    let sentence = counts_sentence(&record);
    assert!(
        page.contains(&sentence),
        "book/src/lib.md must say \"{sentence}\""
    );
    let mut by_feature: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (name, (kind, feature)) in &record {
        if kind == "left-out" {
            by_feature.entry(feature).or_default().push(name);
        }
    }
    for (feature, names) in by_feature {
        let heading = format!("- {feature} ({}): ", names.len());
        let line = page
            .lines()
            .find(|line| line.starts_with(&heading))
            .unwrap_or_else(|| panic!("book/src/lib.md has no line starting \"{heading}\""));
        let listed = line[heading.len()..]
            .split(", ")
            .map(|name| name.trim_matches('`'))
            .collect::<Vec<_>>();
        assert_eq!(
            listed, names,
            "book/src/lib.md's line for {feature} must list its tests in name order"
        );
    }
}

#[test]
fn left_out_features_are_named_from_the_diagnostics() {
    assert_eq!(
        left_out_feature(
            "E036",
            "`builtins.derivation` is not part of the mesh language"
        )
        .as_deref(),
        Some("derivations")
    );
    assert_eq!(
        left_out_feature(
            "E036",
            "`builtins.storeDir` is not part of the mesh language"
        )
        .as_deref(),
        Some("the store (`builtins.storeDir`)")
    );
    assert_eq!(left_out_feature("E020", "expected a set"), None);
    assert_eq!(nix_string("a\"${b}\\"), "\"a\\\"\\${b}\\\\\"");
}
