//! Builds through the broker, from the operator's side: `meshc artifacts build
//! --remote` (ask the builder for every declared artifact, record the answers in
//! `mesh.lock`) and `meshc builds` (the builds view: the builder's record of every
//! result, failures included). The building and the record itself are
//! `transport::builder`'s.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use lang::{Diagnostic, codes};
use plan::display::escaped;
use transport::message::{BuildOutcome, BuildResult};

use crate::say;

/// How long `meshc artifacts build --remote` waits for results by default.
pub const DEFAULT_REMOTE_TIMEOUT: Duration = Duration::from_secs(300);

/// Asks the builder for each directory; prints one line per answer (and a failed
/// build's log); returns the digests of the built ones and whether all were built.
pub fn build_remotely(
    directories: &[String],
    url: &str,
    timeout: Duration,
) -> Result<(BTreeMap<String, String>, bool), Box<Diagnostic>> {
    let (answers, ignored) = transport::remote::build(url, directories, timeout)
        .map_err(|error| crate::publish::broker_unavailable(&error))?;
    let mut digests = BTreeMap::new();
    let mut all = true;
    for answer in answers {
        let result = &answer.result;
        match (&result.outcome, &result.digest) {
            (BuildOutcome::Built, Some(digest)) => {
                say!(
                    "built {} -> {} on `{}` ({} bytes, request {})",
                    answer.directory,
                    escaped(digest),
                    escaped(&result.builder),
                    result.size.unwrap_or_default(),
                    answer.correlation_id
                );
                digests.insert(answer.directory.clone(), digest.clone());
            }
            _ => {
                all = false;
                say!(
                    "error: the build of `{}` failed on `{}` (request {}):",
                    answer.directory,
                    escaped(&result.builder),
                    escaped(&answer.correlation_id)
                );
                // the log comes from the builder: shown, never obeyed by the terminal
                for line in result.log.lines() {
                    say!("  {}", escaped(line));
                }
            }
        }
    }
    if ignored > 0 {
        say!("({ignored} result(s) for other requests ignored)");
    }
    Ok((digests, all))
}

/// The builds view: every result in the record of `store`, oldest first, as a
/// table or as JSON lines.
pub fn render(store: &Path, json: bool) -> Result<String, Box<Diagnostic>> {
    let transport::builder::RecordContents {
        results,
        unreadable,
    } = transport::builder::read_record(store).map_err(|error| {
        Box::new(
            Diagnostic::error(codes::BUILD_RECORD_UNREADABLE, error).with_help(format!(
                "pass `--store DIR`, the directory `mesh-build --store` keeps its archives and its `{}` in (run `meshc builds` on the builder's machine)",
                transport::builder::RECORD_FILE
            )),
        )
    })?;
    for (line, reason) in &unreadable {
        say!(
            "note: line {line} of `{}` cannot be read ({reason}); a build killed while writing it leaves such a line",
            store.join(transport::builder::RECORD_FILE).display()
        );
    }
    let mut out = String::new();
    if json {
        for result in &results {
            let line = serde_json::to_string(result).map_err(|error| {
                Box::new(Diagnostic::bug(format!(
                    "a build result cannot be written as JSON: {error}"
                )))
            })?;
            out.push_str(&line);
            out.push('\n');
        }
        return Ok(out);
    }
    if results.is_empty() {
        out.push_str(&format!("no builds recorded in `{}`\n", store.display()));
        return Ok(out);
    }
    let rows: Vec<[String; 6]> = results.iter().map(row).collect();
    let header = [
        "finished",
        "outcome",
        "directory",
        "result",
        "builder",
        "request",
    ]
    .map(str::to_string);
    let mut widths = header.clone().map(|title| title.len());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    let failed = results
        .iter()
        .filter(|result| result.outcome == BuildOutcome::Failed)
        .count();
    out.push_str(&format!("{} build(s), {failed} failed\n", results.len()));
    Ok(out)
}

fn row(result: &BuildResult) -> [String; 6] {
    let outcome = match &result.digest {
        Some(digest) => digest.clone(),
        None => result.log.lines().next().unwrap_or_default().to_string(),
    };
    [
        result.finished.clone(),
        result.outcome.name().to_string(),
        result.directory.clone().unwrap_or_else(|| "?".to_string()),
        outcome,
        result.builder.clone(),
        result
            .correlation_id
            .clone()
            .unwrap_or_else(|| "-".to_string()),
    ]
}
