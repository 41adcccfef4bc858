//! `meshc explain`: for every code of the registries (the language's and compiler's
//! `lang::codes::REGISTRY`, the applier's `applier::codes::TABLE`, the provisioner's
//! `provisioner::codes::TABLE`), the printed page
//! is the book's `book/src/errors/CODE.md` byte for byte; an unknown code is E121
//! with the closest codes, exit 1.

#[path = "support/repository.rs"]
mod support;

use std::process::{Command, Output};

use support::{MESHC, workspace};

fn explain(code: &str) -> Output {
    Command::new(MESHC)
        .args(["explain", code])
        .env("NO_COLOR", "1")
        .output()
        .expect("meshc runs")
}

fn every_code() -> Vec<String> {
    let mut codes: Vec<String> = lang::codes::REGISTRY
        .iter()
        .map(|(code, _)| code.as_str().to_string())
        .collect();
    codes.extend(
        applier::codes::TABLE
            .iter()
            .map(|(_, code, _)| code.to_string()),
    );
    codes.extend(
        provisioner::codes::TABLE
            .iter()
            .map(|(_, code, _)| code.to_string()),
    );
    codes
}

#[test]
fn explain_prints_the_books_page_of_every_registered_code() {
    let codes = every_code();
    assert!(codes.len() > 100, "the registries were not read");
    for code in codes {
        let output = explain(&code);
        assert_eq!(output.status.code(), Some(0), "{code}");
        let page = std::fs::read(workspace().join(format!("book/src/errors/{code}.md")))
            .unwrap_or_else(|e| panic!("{code}: {e}"));
        assert!(
            output.stdout == page,
            "`meshc explain {code}` is not the book's page"
        );
    }
}

#[test]
fn explain_accepts_a_lower_case_code() {
    assert_eq!(explain("e101").stdout, explain("E101").stdout);
}

#[test]
fn an_unknown_code_is_e121_with_the_closest_codes() {
    let output = explain("E1011");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("E121"), "{stderr}");
    assert!(stderr.contains("`E101`"), "{stderr}");
    assert!(output.stdout.is_empty());
}
