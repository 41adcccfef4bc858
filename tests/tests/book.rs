//! The book builds as one linked whole: every relative link in `book/src/**/*.md`
//! reaches a file of the book, a `#anchor` reaches a heading of its page (with the ids
//! mdBook gives headings), and every page is in `SUMMARY.md`, so none is left out of
//! the built book. CI also runs `mdbook build book` (scripts/test); this test needs no
//! mdBook and runs anywhere. Links inside code (fenced blocks, inline code) are text.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use tests::workspace_root;

fn book() -> PathBuf {
    workspace_root().join("book/src")
}

/// Every `.md` file under `directory`, by path relative to the book's `src`.
fn pages(directory: &Path, pages: &mut BTreeSet<PathBuf>) {
    for entry in std::fs::read_dir(directory).expect("the book's sources") {
        let path = entry.expect("readable").path();
        if path.is_dir() {
            self::pages(&path, pages);
        } else if path.extension().is_some_and(|extension| extension == "md") {
            pages.insert(path.strip_prefix(book()).expect("inside").to_path_buf());
        }
    }
}

/// `line` with its inline code spans (a run of backticks to the next run as long)
/// blanked out.
fn without_code_spans(line: &str) -> String {
    let characters: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut index = 0;
    while index < characters.len() {
        if characters[index] != '`' {
            out.push(characters[index]);
            index += 1;
            continue;
        }
        let run = characters[index..]
            .iter()
            .take_while(|&&c| c == '`')
            .count();
        let after = index + run;
        let mut close = None;
        let mut scan = after;
        while scan < characters.len() {
            if characters[scan] == '`' {
                let length = characters[scan..].iter().take_while(|&&c| c == '`').count();
                if length == run {
                    close = Some(scan);
                    break;
                }
                scan += length;
            } else {
                scan += 1;
            }
        }
        match close {
            Some(close) => {
                out.push(' ');
                index = close + run;
            }
            None => {
                out.extend(&characters[index..after]);
                index = after;
            }
        }
    }
    out
}

/// The lines of a page that are prose (outside fenced code blocks), as written.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut fence: Option<String> = None;
    let mut lines = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(open) = &fence {
            if trimmed.starts_with(open.as_str()) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            let marker: String = trimmed
                .chars()
                .take_while(|&c| c == '`' || c == '~')
                .collect();
            fence = Some(marker);
            continue;
        }
        lines.push(line);
    }
    lines
}

/// The link targets of a page: inline `[text](target "title")` and reference
/// definitions `[name]: target`.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose_lines(text) {
        let line = without_code_spans(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after
                .find(|c: char| c == ')' || c.is_whitespace())
                .unwrap_or(after.len());
            let target = after[..end].trim_matches(|c| c == '<' || c == '>');
            targets.push(target.to_string());
            rest = &after[end..];
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with('[')
            && let Some(at) = trimmed.find("]: ")
        {
            let target = trimmed[at + 3..].split_whitespace().next().unwrap_or("");
            targets.push(target.to_string());
        }
    }
    targets
}

/// The id mdBook gives a heading: its text (code kept, link targets and emphasis
/// dropped), lowercased; whitespace becomes `-`, and only alphanumerics, `-` and `_`
/// are kept.
fn heading_id(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // `[text](target)` reads as `text`
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|close| open + close) else {
            break;
        };
        let Some(end) = rest[close..].find(')').map(|end| close + end) else {
            break;
        };
        text.push_str(&rest[..open]);
        text.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    text.push_str(rest);
    text.chars()
        .filter(|&c| c != '`' && c != '*')
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_ascii_lowercase())
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// The ids of a page's headings, as mdBook makes them (a repeated id gets `-1`, `-2`).
fn heading_ids(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut ids = BTreeSet::new();
    for line in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let id = heading_id(line[hashes..].trim());
        let count = seen.entry(id.clone()).or_insert(0);
        ids.insert(if *count == 0 {
            id.clone()
        } else {
            format!("{id}-{count}")
        });
        *count += 1;
    }
    ids
}

/// `path` with `.` and `..` resolved, without touching the filesystem.
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn is_external(target: &str) -> bool {
    target.contains("://") || target.starts_with("mailto:")
}

#[test]
fn every_relative_link_of_the_book_reaches_a_page_and_its_heading() {
    let root = book();
    let mut all = BTreeSet::new();
    pages(&root, &mut all);
    assert!(all.len() > 100, "the book has {} pages", all.len());
    let texts: BTreeMap<PathBuf, String> = all
        .iter()
        .map(|page| {
            let text = std::fs::read_to_string(root.join(page)).expect("readable");
            (page.clone(), text)
        })
        .collect();
    let ids: BTreeMap<&PathBuf, BTreeSet<String>> = texts
        .iter()
        .map(|(page, text)| (page, heading_ids(text)))
        .collect();
    let mut broken = Vec::new();
    let mut checked = 0;
    for (page, text) in &texts {
        for target in link_targets(text) {
            if target.is_empty() || is_external(&target) {
                continue;
            }
            checked += 1;
            let (file, anchor) = match target.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (target.as_str(), None),
            };
            let linked = if file.is_empty() {
                page.clone()
            } else {
                normal(&page.parent().unwrap_or(Path::new("")).join(file))
            };
            if linked.starts_with("..") || !root.join(&linked).exists() {
                broken.push(format!(
                    "{}: `{target}` reaches no file of the book",
                    page.display()
                ));
                continue;
            }
            if let Some(anchor) = anchor
                && linked
                    .extension()
                    .is_some_and(|extension| extension == "md")
                && !ids.get(&linked).is_some_and(|ids| ids.contains(anchor))
            {
                broken.push(format!(
                    "{}: `{target}`: {} has no heading with the id `{anchor}`",
                    page.display(),
                    linked.display()
                ));
            }
        }
    }
    assert!(checked > 100, "only {checked} relative links were found");
    assert!(
        broken.is_empty(),
        "broken links in the book:\n{}",
        broken.join("\n")
    );
}

#[test]
fn every_page_of_the_book_is_in_the_summary() {
    let root = book();
    let mut all = BTreeSet::new();
    pages(&root, &mut all);
    let summary = std::fs::read_to_string(root.join("SUMMARY.md")).expect("SUMMARY.md");
    let listed: BTreeSet<PathBuf> = link_targets(&summary)
        .into_iter()
        .filter(|target| !is_external(target))
        .map(|target| normal(Path::new(target.split('#').next().unwrap_or_default())))
        .collect();
    let missing: Vec<_> = all
        .iter()
        .filter(|page| page.as_path() != Path::new("SUMMARY.md") && !listed.contains(*page))
        .map(|page| page.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "pages not in book/src/SUMMARY.md (mdBook leaves them out of the book): {missing:?}"
    );
}

#[test]
fn links_and_heading_ids_are_read_as_mdbook_reads_them() {
    let page = "# `mesh.lib`: nixpkgs' helpers\n\
                see [the errors](errors.md#e001-syntax-error) and `[not](a-link.md)`\n\
                ```nix\n[nor](this.md)\n```\n\
                [reference]: ../other.md\n\
                ## Twice\n## Twice\n";
    assert_eq!(
        link_targets(page),
        vec!["errors.md#e001-syntax-error", "../other.md"]
    );
    assert_eq!(
        heading_ids(page),
        BTreeSet::from([
            "meshlib-nixpkgs-helpers".to_string(),
            "twice".to_string(),
            "twice-1".to_string()
        ])
    );
    assert_eq!(
        heading_id("E001: syntax error"),
        "e001-syntax-error".to_string()
    );
    assert_eq!(
        heading_id("Bring your own nixpkgs [`lib`](lib.md)"),
        "bring-your-own-nixpkgs-lib"
    );
}
