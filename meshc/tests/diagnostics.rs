//! One fixture repository per diagnostic: `tests/data/<area>/<case>/` holds a small
//! repository and `expect.txt`, whose header lines state the code, the primary
//! location and what the message and help contain, followed by the rendered
//! diagnostics exactly as `meshc check` shows them (no colour, paths relative).
//! Regenerate the rendered part with `MESH_BLESS=1 cargo test -p meshc --test diagnostics`
//! and review it like code; the header lines are written by hand.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use compiler::compile;
use meshc::render;

struct Expectation {
    code: String,
    primary: Option<String>,
    message_contains: Vec<String>,
    help_contains: Vec<String>,
    secondary: Vec<String>,
    rendered: String,
}

const SEPARATOR: &str = "---- rendered ----\n";

fn read_expectation(path: &Path) -> Expectation {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (header, rendered) = text.split_once(SEPARATOR).unwrap_or((&text, ""));
    let mut expectation = Expectation {
        code: String::new(),
        primary: None,
        message_contains: Vec::new(),
        help_contains: Vec::new(),
        secondary: Vec::new(),
        rendered: rendered.to_string(),
    };
    for line in header.lines() {
        let Some((key, value)) = line.split_once(": ") else {
            continue;
        };
        let value = value.trim().to_string();
        match key {
            "code" => expectation.code = value,
            "primary" => expectation.primary = Some(value),
            "message-contains" => expectation.message_contains.push(value),
            "help-contains" => expectation.help_contains.push(value),
            "secondary" => expectation.secondary.push(value),
            _ => {}
        }
    }
    assert!(
        !expectation.code.is_empty(),
        "{}: no `code:` line",
        path.display()
    );
    expectation
}

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut cases = Vec::new();
    for area in std::fs::read_dir(&root).expect("tests/data exists") {
        let area = area.expect("readable").path();
        if !area.is_dir() {
            continue;
        }
        for case in std::fs::read_dir(&area).expect("readable") {
            let case = case.expect("readable").path();
            if case.join("expect.txt").is_file() {
                cases.push(case);
            }
        }
    }
    cases.sort();
    cases
}

fn location(sources: &lang::Sources, span: lang::Span, root: &Path) -> String {
    let file = sources.get(span.file).expect("span in a known file");
    let (line, column) = file.line_column(span.start);
    let name = file
        .path
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| file.name.clone());
    format!("{}:{line}:{column}", compiler::display_path(&name, root))
}

fn check_case(case: &Path, bless: bool) -> Result<(), String> {
    let expectation = read_expectation(&case.join("expect.txt"));
    let compilation = compile(case);
    let mut rendered = String::new();
    for diagnostic in &compilation.diagnostics {
        let text = render::render(diagnostic, &compilation.sources, false, false);
        let root = compilation.root.display().to_string();
        rendered.push_str(&text.replace(&root, "<repo>"));
    }
    if bless {
        let text = std::fs::read_to_string(case.join("expect.txt")).map_err(|e| e.to_string())?;
        let header = text
            .split_once(SEPARATOR)
            .map(|(h, _)| h.to_string())
            .unwrap_or(text);
        std::fs::write(
            case.join("expect.txt"),
            format!("{header}{SEPARATOR}{rendered}"),
        )
        .map_err(|e| e.to_string())?;
    }
    let Some(diagnostic) = compilation
        .diagnostics
        .iter()
        .find(|d| d.code.as_str() == expectation.code)
    else {
        let found: Vec<String> = compilation
            .diagnostics
            .iter()
            .map(|d| format!("{} {}", d.code, d.message))
            .collect();
        return Err(format!("expected {}, found: {found:?}", expectation.code));
    };
    let mut problems = String::new();
    if let Some(primary) = &expectation.primary {
        match &diagnostic.primary {
            Some(label) => {
                let actual = location(&compilation.sources, label.span, &compilation.root);
                if &actual != primary {
                    let _ = writeln!(problems, "primary at {actual}, expected {primary}");
                }
            }
            None => {
                let _ = writeln!(problems, "no primary span, expected {primary}");
            }
        }
    }
    if diagnostic.help.as_deref().unwrap_or("").is_empty() {
        let _ = writeln!(problems, "no help line");
    }
    for needle in &expectation.message_contains {
        if !diagnostic.message.contains(needle.as_str()) {
            let _ = writeln!(
                problems,
                "message {:?} lacks {needle:?}",
                diagnostic.message
            );
        }
    }
    for needle in &expectation.help_contains {
        if !diagnostic
            .help
            .as_deref()
            .unwrap_or("")
            .contains(needle.as_str())
        {
            let _ = writeln!(problems, "help {:?} lacks {needle:?}", diagnostic.help);
        }
    }
    for expected in &expectation.secondary {
        let found = diagnostic.secondary.iter().any(|label| {
            &location(&compilation.sources, label.span, &compilation.root) == expected
        });
        if !found {
            let _ = writeln!(problems, "no secondary label at {expected}");
        }
    }
    if !bless && rendered != expectation.rendered {
        let _ = writeln!(
            problems,
            "rendered output differs:\n--- expected\n{}--- actual\n{rendered}",
            expectation.rendered
        );
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

#[test]
fn every_fixture_reports_its_diagnostic() {
    let bless = std::env::var_os("MESH_BLESS").is_some();
    let cases = cases();
    assert!(!cases.is_empty());
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(problem) = check_case(case, bless) {
            failures.push(format!("{}:\n{problem}", case.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixtures failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Codes that `compile()` alone cannot produce, each with the test file and test
/// that covers it instead. The test must exist there.
const COVERED_ELSEWHERE: &[(&str, &str, &str)] = &[
    (
        "E053",
        "tests/fmt.rs",
        "a_formatted_file_that_cannot_be_written_is_e053_and_left_as_it_was",
    ),
    // E050 and E051 come from `meshc repl`, E052 and E054 from `meshc fmt`
    (
        "E050",
        "tests/repl.rs",
        "node_puts_the_nodes_node_and_settings_in_scope",
    ),
    (
        "E051",
        "tests/repl.rs",
        "a_runaway_line_ends_in_a_diagnostic_and_the_session_goes_on",
    ),
    (
        "E052",
        "tests/fmt.rs",
        "a_form_only_nix_2_8_reads_is_refused_with_e052",
    ),
    (
        "E054",
        "tests/fmt.rs",
        "a_chain_too_long_for_the_formatter_is_refused_quickly_with_e054",
    ),
    // E420 comes from comparing a repository with a build output, which only
    // `meshc diff` does
    (
        "E420",
        "tests/cli.rs",
        "diff_refuses_a_build_of_another_repository",
    ),
    // E421 comes from the output `meshc build` is given
    (
        "E421",
        "tests/build.rs",
        "an_output_that_is_not_this_repositorys_build_is_refused_and_kept",
    ),
    // E422 comes from the default build `meshc diff` and `meshc publish` read
    (
        "E422",
        "tests/diff.rs",
        "a_build_that_came_with_the_repository_is_refused_with_e422",
    ),
    // E408 comes from reading a build output back, which `meshc diff`, `publish` and
    // `deploy` do and `meshc check` never does
    (
        "E408",
        "tests/diff.rs",
        "an_unreadable_build_is_reported_as_e408",
    ),
    // E304 and E305 come from making secrets, which `meshc check` never does
    (
        "E304",
        "tests/secrets.rs",
        "locked_build_refuses_an_unmade_need_and_makes_nothing",
    ),
    (
        "E305",
        "tests/secrets.rs",
        "an_unwritable_store_is_reported_as_e305",
    ),
    // E430 comes from `meshc deploy --on`, which selects among compiled nodes
    (
        "E430",
        "../tests/tests/deploy.rs",
        "deploy_to_all_to_a_tag_and_to_one_node",
    ),
    // E321-E323 come from `meshc secrets reseal`, which needs a key rotation made at
    // run time
    (
        "E321",
        "tests/reseal.rs",
        "a_wrong_identity_changes_nothing",
    ),
    (
        "E322",
        "tests/reseal.rs",
        "a_wrong_identity_changes_nothing",
    ),
    (
        "E323",
        "tests/reseal.rs",
        "a_wrong_identity_changes_nothing",
    ),
    // E312 and E409 need symbolic links made at run time into a copy of the example
    ("E312", "tests/secrets.rs", "symlinked_secrets_dir_refused"),
    (
        "E409",
        "tests/build.rs",
        "stale_removal_through_symlinked_nodes_refused",
    ),
    // E313 needs links in an artifact directory, made at run time
    (
        "E313",
        "tests/artifacts.rs",
        "archive_link_escaping_through_link_refused",
    ),
    // E407, build output cannot be written: only `meshc build` writes, after compiling
    (
        "E407",
        "tests/build.rs",
        "read_only_output_directory_is_reported_as_e407",
    ),
    // E315, an artifact that cannot be stored: only `meshc artifacts build` stores
    (
        "E315",
        "tests/artifacts.rs",
        "repository_store_linked_out_of_the_repository_refused",
    ),
    // E316, the builder's record unreadable: only `meshc builds` reads it
    (
        "E316",
        "tests/cli.rs",
        "builds_of_an_unreadable_record_is_e316",
    ),
    // E440, the broker unavailable: only the transport commands talk to it
    (
        "E440",
        "tests/cli.rs",
        "publish_and_broker_permissions_failures_are_coded_diagnostics",
    ),
    // E055, man pages that cannot be written: only `meshc man` writes them
    (
        "E055",
        "tests/cli.rs",
        "man_pages_that_cannot_be_written_are_e055",
    ),
    // E056, E057, E058, E059, E113, E317 and E324 fail on meshc's surroundings, not
    // on a repository: standard output, standard input, the editor, the process's
    // limits, the current directory, a `mesh.lock` that cannot be written or read
    (
        "E056",
        "tests/surroundings.rs",
        "standard_output_that_cannot_be_written_is_e056",
    ),
    (
        "E057",
        "tests/surroundings.rs",
        "repl_of_an_unreadable_standard_input_is_e057",
    ),
    (
        "E058",
        "tests/surroundings.rs",
        "lsp_whose_editor_hangs_up_before_initialize_is_e058",
    ),
    (
        "E059",
        "tests/surroundings.rs",
        "no_room_for_an_evaluation_thread_is_e059",
    ),
    (
        "E113",
        "tests/surroundings.rs",
        "a_removed_current_directory_is_e113",
    ),
    (
        "E317",
        "tests/surroundings.rs",
        "a_lock_that_cannot_be_written_is_e317",
    ),
    (
        "E324",
        "tests/surroundings.rs",
        "a_lock_that_cannot_be_read_is_e324_not_an_invalid_lock",
    ),
    // E120, unknown node: only `meshc show NODE` names a node
    (
        "E120",
        "tests/show.rs",
        "an_unknown_node_is_e120_with_the_closest_name",
    ),
    // E211, a secret in a provider's facts: `provides` takes `node` and `settings`
    // only, so no module reaches a secret there today; the guard is tested with a
    // handle given to the facts reader directly, at a line of its source
    (
        "E211",
        "../compiler/src/link/facts.rs",
        "a_secret_in_facts_is_e211_at_its_line_and_its_content_is_never_shown",
    ),
    // E121, unknown diagnostic code: only `meshc explain CODE` names a code
    (
        "E121",
        "tests/explain.rs",
        "an_unknown_code_is_e121_with_the_closest_codes",
    ),
    // E122-E125, the build cache's notes: only `meshc build` reads a cache, and
    // each needs an output changed between two builds
    (
        "E122",
        "tests/cache.rs",
        "a_damaged_cache_is_e122_and_ignored",
    ),
    (
        "E123",
        "tests/cache.rs",
        "a_cache_of_another_repository_is_e123_and_ignored",
    ),
    (
        "E124",
        "tests/cache.rs",
        "a_tampered_plan_in_the_output_is_e124_and_compiled_again",
    ),
    // E125 needs a file changed between the cache's check and the build's read
    (
        "E125",
        "tests/cache.rs",
        "a_file_changed_while_the_build_read_it_is_e125_and_no_cache_is_kept",
    ),
];

#[test]
fn every_compiler_code_has_a_fixture() {
    let mut covered: std::collections::BTreeSet<String> = cases()
        .iter()
        .map(|case| read_expectation(&case.join("expect.txt")).code)
        .collect();
    for (code, file, test) in COVERED_ELSEWHERE {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(
            source.contains(&format!("fn {test}()")),
            "{code} is said to be covered by `{test}` in {file}, which has no such test"
        );
        covered.insert(code.to_string());
    }
    let missing: Vec<&str> = lang::codes::REGISTRY
        .iter()
        .map(|(code, _)| code.as_str())
        .filter(|code| {
            code.starts_with("E1")
                || code.starts_with("E2")
                || code.starts_with("E3")
                || code.starts_with("E4")
        })
        .filter(|code| !covered.contains(*code))
        .collect();
    assert!(missing.is_empty(), "codes without a fixture: {missing:?}");
}
