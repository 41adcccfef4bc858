//! Nix source in the community's style, for `meshc fmt` and the editor's formatting:
//! alejandra (the formatter crate, used as a library) does the formatting; this file
//! turns its refusals into diagnostics and finds the `.nix` files of a repository.
//! It never writes a file: the command does, with what this returns.

use std::path::{Path, PathBuf};

use lang::{Diagnostic, Sources, codes};

/// Passes of the formatter until its output no longer changes: alejandra reaches its
/// fixed point in one pass on nearly every file, in two on a few (a comment after a
/// `let` binding moves once more), so `meshc fmt` is idempotent.
const MAX_PASSES: usize = 4;

/// `text` formatted, or why it cannot be: the mesh parser's syntax errors when it
/// has some (they point into `sources`; its nesting bound keeps the formatter, which
/// recurses, off files nested deeper than evaluation allows), else the formatter's
/// own refusal. The formatter runs on a thread with the evaluator's large stack.
pub fn format_text(
    name: &str,
    text: &str,
    sources: &mut Sources,
) -> Result<String, Vec<Diagnostic>> {
    let file = sources.add(
        name.to_string(),
        None,
        std::sync::Arc::from(text.as_bytes()),
    );
    let parsed = lang::parser::parse(text.as_bytes(), file);
    if !parsed.errors.is_empty() {
        return Err(parsed.errors);
    }
    drop(parsed);
    if let Some(line) = changes_indented_strings(text) {
        return Err(vec![
            Diagnostic::error(
                codes::FORMATTER_REFUSED,
                format!("`{name}` cannot be formatted: line {line} has a tab, a carriage return or trailing whitespace, and the file has an indented string (`''`), whose value the formatter would change"),
            )
            .with_help("alejandra strips trailing whitespace, carriage returns and tabs inside indented strings, which changes their values; remove them (or use a `\"...\"` string) and format again"),
        ]);
    }
    let (owned_name, owned_text) = (name.to_string(), text.to_string());
    let refusal = match lang::eval::run_with_stack(move || fixed_point(owned_name, owned_text)) {
        Ok(formatted) => return Ok(formatted),
        Err(refusal) => refusal,
    };
    Err(vec![
        Diagnostic::error(
            codes::FORMATTER_REFUSED,
            format!("`{name}` cannot be formatted: {refusal}"),
        )
        .with_help("the formatter reads the Nix language as current Nix does; rewrite the construct it names, or leave the file out of `meshc fmt`'s paths"),
    ])
}

/// The first line (1-based) that could make alejandra change a value: in a file with
/// an indented string, a line with a tab, a carriage return or trailing whitespace.
/// Conservative (the line need not be inside the string); measured on the language
/// corpus, where those are the only value changes formatting makes.
fn changes_indented_strings(text: &str) -> Option<usize> {
    if !text.contains("''") {
        return None;
    }
    text.split('\n')
        .position(|line| line.contains('\t') || line.contains('\r') || line.ends_with(' '))
        .map(|index| index + 1)
}

fn fixed_point(name: String, mut text: String) -> Result<String, String> {
    for _ in 0..MAX_PASSES {
        let input = text.clone();
        let pass_name = name.clone();
        let outcome =
            std::panic::catch_unwind(move || alejandra::format::in_memory(pass_name, input));
        match outcome {
            Ok((alejandra::format::Status::Changed(false), _)) => return Ok(text),
            Ok((alejandra::format::Status::Changed(true), after)) => text = after,
            Ok((alejandra::format::Status::Error(message), _)) => return Err(message),
            Err(_) => return Err("the formatter failed on this file".to_string()),
        }
    }
    Ok(text)
}

/// Every `.nix` file under `path` (itself if it is a file), in name order. Hidden
/// directories (`.git`) and the build output `build/` of a repository are skipped.
pub fn nix_files(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    if std::fs::metadata(path)?.is_file() {
        files.push(path.to_path_buf());
        return Ok(files);
    }
    let mut pending = vec![path.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory)? {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let file_type = entry.file_type()?;
            if file_type.is_dir() {
                let is_build_output = name == "build" && directory.join("mesh.nix").is_file();
                if !name.starts_with('.') && name != "target" && !is_build_output {
                    pending.push(entry.path());
                }
            } else if file_type.is_file() && name.ends_with(".nix") {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    Ok(files)
}
