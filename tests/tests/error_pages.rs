//! Every diagnostic code has its book page and a failing test (STYLE.md, "Diagnostics").
//! The registries are read as data (`lang::codes`, `applier::codes` and
//! `provisioner::codes`), not as text. For every code of the three:
//! a page `book/src/errors/CODE.md` whose first line is a `# CODE` heading holding its
//! title; a link in the index `book/src/errors.md` and in `book/src/SUMMARY.md`; and a
//! test case that expects it. No page, index row or summary entry names a code that
//! is not registered.

use std::collections::{BTreeMap, BTreeSet};

use tests::workspace_root;

fn read(relative: &str) -> String {
    let path = workspace_root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn is_code(text: &str) -> bool {
    text.len() == 4 && text.starts_with('E') && text[1..].bytes().all(|b| b.is_ascii_digit())
}

/// The string literals of a piece of Rust source, in order; `//` comments are skipped.
fn string_literals(source: &str) -> Vec<String> {
    let mut literals = Vec::new();
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '"' => {
                let mut literal = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => {
                            if let Some(escaped) = chars.next() {
                                literal.push(escaped);
                            }
                        }
                        other => literal.push(other),
                    }
                }
                literals.push(literal);
            }
            _ => {}
        }
    }
    literals
}

/// The text of `source` from the first `start` to the first `end` after it.
fn between<'a>(source: &'a str, start: &str, end: &str, file: &str) -> &'a str {
    let from = source
        .find(start)
        .unwrap_or_else(|| panic!("{file}: no `{start}`"));
    let rest = &source[from + start.len()..];
    let to = rest
        .find(end)
        .unwrap_or_else(|| panic!("{file}: no `{end}` after `{start}`"));
    &rest[..to]
}

/// Every registered code with its title, read from the registries themselves (the
/// language's and compiler's `lang::codes::Code`, whose number and title come from
/// one exhaustive match each, then the applier's `applier::codes::TABLE` and the
/// provisioner's `provisioner::codes::TABLE`).
fn registry() -> BTreeMap<String, String> {
    let language = lang::codes::REGISTRY
        .iter()
        .map(|(code, title)| (code.as_str(), *title));
    let applier = applier::codes::TABLE.iter().map(|(code, number, title)| {
        assert_eq!(code.as_str(), *number, "{code:?}");
        (*number, *title)
    });
    let provisioner = provisioner::codes::TABLE
        .iter()
        .map(|(code, number, title)| {
            assert_eq!(code.as_str(), *number, "{code:?}");
            assert!(
                number.starts_with("E6"),
                "{number}: the provisioner's block is E6xx"
            );
            (*number, *title)
        });
    let mut registry = BTreeMap::new();
    for (code, title) in language.chain(applier).chain(provisioner) {
        assert!(is_code(code), "`{code}` is not a code");
        assert!(
            registry
                .insert(code.to_string(), title.to_string())
                .is_none(),
            "{code} is registered twice"
        );
    }
    for expected in ["E001", "E100", "E500", "E600", "E900"] {
        assert!(
            registry.contains_key(expected),
            "the registries were not read: no {expected}"
        );
    }
    registry
}

/// Codes some test case expects: a language fail case's `# expect:` line, a compiler
/// fixture's `code:` line, a `COVERED_ELSEWHERE` entry of the compiler's diagnostics
/// test, a literal `"E5NN"` in the applier's tests (they pass the code they expect
/// to `refused(...)` or compare `error_codes(...)` with it), or a literal `"E6NN"` in
/// the provisioner's (which compare the printed `error[E6NN]` or JSON `code` with it).
fn tested_codes() -> BTreeSet<String> {
    let root = workspace_root();
    let mut tested = BTreeSet::new();
    let fail_cases = root.join("lang/tests/data/eval/fail");
    for entry in std::fs::read_dir(&fail_cases).expect("lang fail cases") {
        let path = entry.expect("readable").path();
        if path.extension().is_some_and(|e| e == "nix") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if let Some(code) = text
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("# expect:"))
            {
                tested.insert(code.trim().to_string());
            }
        }
    }
    let fixtures = root.join("meshc/tests/data");
    for area in std::fs::read_dir(&fixtures).expect("compiler fixtures") {
        let area = area.expect("readable").path();
        if !area.is_dir() {
            continue;
        }
        for case in std::fs::read_dir(&area).expect("readable") {
            let expect = case.expect("readable").path().join("expect.txt");
            let Ok(text) = std::fs::read_to_string(&expect) else {
                continue;
            };
            if let Some(code) = text.lines().find_map(|l| l.strip_prefix("code:")) {
                tested.insert(code.trim().to_string());
            }
        }
    }
    let diagnostics_file = "meshc/tests/diagnostics.rs";
    let diagnostics = read(diagnostics_file);
    let covered = string_literals(between(
        &diagnostics,
        "const COVERED_ELSEWHERE",
        "];",
        diagnostics_file,
    ));
    assert!(
        covered.chunks_exact(3).remainder().is_empty(),
        "{diagnostics_file}: COVERED_ELSEWHERE is (code, file, test)"
    );
    for entry in covered.chunks(3) {
        let (code, file, test) = (&entry[0], &entry[1], &entry[2]);
        let source = read(&format!("meshc/{file}"));
        assert!(
            source.contains(&format!("fn {test}()")),
            "{code} is said to be covered by `{test}` in meshc/{file}, which has no such test"
        );
        tested.insert(code.clone());
    }
    for directory in ["applier/tests", "provisioner/tests"] {
        for entry in std::fs::read_dir(root.join(directory)).expect(directory) {
            let path = entry.expect("readable").path();
            if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                tested.extend(string_literals(&text).into_iter().filter_map(|literal| {
                    // `"error[E601]: manifest ..."` expects E601 as much as `"E601"` does
                    let code = literal
                        .strip_prefix("error[")
                        .and_then(|rest| rest.get(..4))
                        .unwrap_or(&literal);
                    is_code(code).then(|| code.to_string())
                }));
            }
        }
    }
    tested
}

/// Codes without a test case that expects them, each with the reason and where the
/// condition behind it is tested instead. E9xx (internal errors) need none: a test
/// that could produce one would be a test of a bug.
const UNTESTED: &[(&str, &str)] = &[
    (
        "E518",
        "only a plan that passes the plan format's validation and still makes a unit Quadlet \
     would skip reaches it, which is a bug in mesh-apply that no known plan shows; the \
     checker behind it is tested in applier/tests/kinds.rs \
     (quadlet_checker_refuses_what_quadlet_would_skip)",
    ),
    (
        "E522",
        "only a kernel without `openat2` (Linux before 5.6) reaches it, and every machine the \
     suite runs on has one; the mapping from ENOSYS to E522 is tested in applier/src/host.rs \
     (a_kernel_without_openat2_is_refused_with_e522)",
    ),
    (
        "E545",
        "only an apply that panics reaches it, which is a bug in mesh-apply that no known plan \
     shows; the problem the supervisor's report of it becomes is tested in \
     applier/src/listen.rs (each_trouble_of_the_listener_is_a_coded_problem_with_a_help_line)",
    ),
    (
        "E610",
        "only a server that takes a SCRAM-SHA-256 verifier for a password and hashes it \
     (older than PostgreSQL 10, or one that does not parse it) reaches it, and the \
     provisioner needs PostgreSQL 14; the problem is tested in provisioner/src/reconcile.rs \
     (each_refusal_has_its_code_the_login_and_a_help_line)",
    ),
    (
        "E613",
        "only a session that outlives `pg_terminate_backend`'s 5 s wait reaches it (a backend \
     that does not check for interrupts), which no test server can be made to hold; the \
     problem is tested in provisioner/src/reconcile.rs \
     (each_refusal_has_its_code_the_login_and_a_help_line)",
    ),
];

#[test]
fn every_code_has_a_page_with_its_heading() {
    let registry = registry();
    let mut problems = Vec::new();
    for (code, title) in &registry {
        let relative = format!("book/src/errors/{code}.md");
        let Ok(text) = std::fs::read_to_string(workspace_root().join(&relative)) else {
            problems.push(format!("{code} ({title}) has no page {relative}"));
            continue;
        };
        let first = text.lines().next().unwrap_or("");
        let heading = first
            .strip_prefix("# ")
            .and_then(|rest| rest.strip_prefix(code.as_str()));
        match heading {
            Some(rest) if !rest.starts_with(|c: char| c.is_alphanumeric()) => {
                if !rest.contains(title.as_str()) {
                    problems.push(format!(
                        "{relative}: the heading `{first}` lacks the title `{title}`"
                    ));
                }
            }
            _ => problems.push(format!(
                "{relative}: starts with `{first}`, not a `# {code}` heading"
            )),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_page_is_a_registered_code() {
    let registry = registry();
    let directory = workspace_root().join("book/src/errors");
    let orphans: Vec<String> = std::fs::read_dir(&directory)
        .expect("book/src/errors")
        .map(|entry| entry.expect("readable").file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| {
            name.strip_suffix(".md")
                .is_none_or(|code| !registry.contains_key(code))
        })
        .collect();
    assert!(
        orphans.is_empty(),
        "files in book/src/errors/ that are not the page of a registered code: {orphans:?}"
    );
}

/// The codes `text` links as `(errors/CODE.md)`.
fn linked_codes(text: &str) -> BTreeSet<String> {
    text.split("(errors/")
        .skip(1)
        .filter_map(|rest| rest.split_once(".md)").map(|(code, _)| code.to_string()))
        .collect()
}

fn check_links(file: &str) {
    let registry = registry();
    let linked = linked_codes(&read(file));
    let missing: Vec<&String> = registry.keys().filter(|c| !linked.contains(*c)).collect();
    let unknown: Vec<&String> = linked
        .iter()
        .filter(|c| !registry.contains_key(*c))
        .collect();
    assert!(
        missing.is_empty(),
        "{file} does not link the page of {missing:?}"
    );
    assert!(
        unknown.is_empty(),
        "{file} links pages of codes that are not registered: {unknown:?}"
    );
}

#[test]
fn the_index_lists_every_code() {
    check_links("book/src/errors.md");
}

#[test]
fn the_summary_links_every_page() {
    check_links("book/src/SUMMARY.md");
}

#[test]
fn every_code_has_a_failing_test() {
    let registry = registry();
    let tested = tested_codes();
    let mut problems = Vec::new();
    for (code, reason) in UNTESTED {
        assert!(!reason.is_empty());
        if !registry.contains_key(*code) {
            problems.push(format!("{code} is in UNTESTED but not registered"));
        } else if tested.contains(*code) {
            problems.push(format!(
                "{code} has a test now: remove it from UNTESTED ({reason})"
            ));
        }
    }
    for (code, title) in &registry {
        let internal = code.starts_with("E9");
        let excused = UNTESTED.iter().any(|(untested, _)| untested == code);
        if !internal && !excused && !tested.contains(code) {
            problems.push(format!("{code} ({title}) has no test case that expects it"));
        }
    }
    let unknown: Vec<&String> = tested
        .iter()
        .filter(|c| !registry.contains_key(*c))
        .collect();
    assert!(
        unknown.is_empty(),
        "test cases expect codes that are not registered: {unknown:?}"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_literal_reader_reads_escapes_and_skips_comments() {
    let source = "// \"not this\"\nA = \"E001\", \"a \\\"quoted\\\" title\"; // \"nor this\"\n";
    assert_eq!(
        string_literals(source),
        vec!["E001".to_string(), "a \"quoted\" title".to_string()]
    );
}
