//! Nix source in the community's style, for `meshc fmt` and the editor's formatting:
//! alejandra (the formatter crate, used as a library) does the formatting; this file
//! turns its refusals into diagnostics and finds the `.nix` files of a repository.
//! It never writes a file: the command does, with what this returns. alejandra is
//! slow on long chains (`chains`), so formatting is bounded twice: a file with a chain
//! too long is refused before it starts, and a formatting that outlasts its time limit
//! is abandoned (E054), so neither `meshc fmt` nor an editor waits on hostile input.

mod chains;
mod meaning;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use lang::{Diagnostic, Sources, codes};

/// How long `meshc fmt` lets the formatter work on one file.
pub const COMMAND_TIME_LIMIT: Duration = Duration::from_secs(20);
/// How long the editor's formatting request waits for the formatter.
pub const EDITOR_TIME_LIMIT: Duration = Duration::from_secs(3);

/// Set while a formatting runs, including one abandoned at its time limit (a thread
/// cannot be stopped): a new formatting is refused meanwhile rather than piling a
/// second slow one onto the first.
static FORMATTING: AtomicBool = AtomicBool::new(false);

/// Passes of the formatter until its output no longer changes: alejandra reaches its
/// fixed point in one pass on nearly every file, in two on a few (a comment after a
/// `let` binding moves once more), so `meshc fmt` is idempotent.
const MAX_PASSES: usize = 4;

/// `text` formatted, or why it cannot be: the mesh parser's syntax errors when it
/// has some (they point into `sources`; its nesting bound keeps the formatter, which
/// recurses, off files nested deeper than evaluation allows), else the formatter's
/// own refusal, or E054 for a chain too long or a formatting past `time_limit`. The
/// parse and the formatter run on threads with the evaluator's large stack.
pub fn format_text(
    name: &str,
    text: &str,
    sources: &mut Sources,
    time_limit: Duration,
) -> Result<String, Vec<Diagnostic>> {
    let file = sources.add(
        name.to_string(),
        None,
        std::sync::Arc::from(text.as_bytes()),
    );
    // the parse, the walk and the tree's drop recurse as deeply as the file nests: on
    // the evaluator's stack, not the caller's (`meshc fmt` calls on its main thread,
    // whose 8 MB ran out on a list nested 9,000 deep, which the parser takes)
    let owned = text.to_string();
    let (chain, chain_span) = lang::eval::run_with_stack(move || {
        let parsed = lang::parser::parse(owned.as_bytes(), file);
        if !parsed.errors.is_empty() {
            return Err(parsed.errors);
        }
        Ok(chains::longest_chain(&parsed.expr))
    })
    .map_err(|diagnostic| vec![*diagnostic])??;
    if chain > chains::MAX_CHAIN {
        return Err(vec![
            Diagnostic::error(
                codes::FORMATTING_TOO_SLOW,
                format!("`{name}` is not formatted: it has a chain of {chain} arguments or attribute names, more than the {} the formatter takes in reasonable time", chains::MAX_CHAIN),
            )
            .with_primary(chain_span, format!("the first of {chain} in a row"))
            .with_help("the formatter's time grows with the square of a chain's length; split it (bind parts with `let`, or nest sets), or leave the file out of `meshc fmt`'s paths"),
        ]);
    }
    if let Some(line) = changes_indented_strings(text) {
        return Err(vec![
            Diagnostic::error(
                codes::FORMATTER_REFUSED,
                format!("`{name}` cannot be formatted: line {line} has trailing whitespace or whitespace other than spaces (a tab, a carriage return, a no-break space...), and the file has an indented string (`''`), whose value the formatter would change"),
            )
            .with_help("alejandra strips trailing whitespace and re-indents other whitespace (tabs, carriage returns, Unicode spaces) inside indented strings, which changes their values; remove them, write them as escapes in a `\"...\"` string, and format again"),
        ]);
    }
    let refusal = match bounded(name, text, time_limit) {
        Ok(Ok(formatted)) => return same_meaning(name, text, file, formatted),
        Ok(Err(refusal)) => refusal,
        Err(why) => {
            return Err(vec![
                Diagnostic::error(
                    codes::FORMATTING_TOO_SLOW,
                    format!("`{name}` is not formatted: {why}"),
                )
                .with_help("the formatter is slow on some very long or repetitive files; split the file, or leave it out of `meshc fmt`'s paths"),
            ]);
        }
    };
    Err(vec![
        Diagnostic::error(
            codes::FORMATTER_REFUSED,
            format!("`{name}` cannot be formatted: {refusal}"),
        )
        .with_help("the formatter reads the Nix language as current Nix does; rewrite the construct it names, or leave the file out of `meshc fmt`'s paths"),
    ])
}

/// `formatted` when it parses to what `text` (the file `file`) parses to, spans
/// aside; else E052 at the first place where it would mean something else, and
/// the file is left as it is.
fn same_meaning(
    name: &str,
    text: &str,
    file: lang::FileId,
    formatted: String,
) -> Result<String, Vec<Diagnostic>> {
    let (before, after) = (text.to_string(), formatted.clone());
    let parted = lang::eval::run_with_stack(move || {
        let before = lang::parser::parse(before.as_bytes(), file);
        let after = lang::parser::parse(after.as_bytes(), file);
        if !after.errors.is_empty() {
            return Some(before.expr.span);
        }
        meaning::first_difference(&before.expr, &after.expr)
    })
    .map_err(|diagnostic| vec![*diagnostic])?;
    let Some(span) = parted else {
        return Ok(formatted);
    };
    Err(vec![
        Diagnostic::error(
            codes::FORMATTER_REFUSED,
            format!("`{name}` is not formatted: the formatter's version of it would mean something else"),
        )
        .with_primary(span, "formatted, this would read differently")
        .with_help("the formatter reads the Nix language as current Nix does, which differs from mesh here (a number written `.5e1` came back as `.5 e1`); write the marked expression another way (`5.0`), or leave the file out of `meshc fmt`'s paths"),
    ])
}

/// The first line (1-based) that could make alejandra change a value: in a file with
/// an indented string, a line with trailing whitespace or with whitespace other
/// than the space (a tab, a carriage return, a vertical tab or form feed, and the
/// Unicode spaces: no-break, ideographic, next line...). Conservative (the line
/// need not be inside the string); alejandra strips or re-indents all of these
/// inside indented strings, and Nix counts only the space as indentation.
fn changes_indented_strings(text: &str) -> Option<usize> {
    if !text.contains("''") {
        return None;
    }
    text.split('\n')
        .position(|line| line.ends_with(' ') || line.chars().any(|c| c.is_whitespace() && c != ' '))
        .map(|index| index + 1)
}

/// The formatter's answer within `time_limit`, or why there is none: the time ran out
/// (the thread is left to finish, and [`FORMATTING`] stays set until it does) or an
/// abandoned formatting still runs.
fn bounded(name: &str, text: &str, time_limit: Duration) -> Result<Result<String, String>, String> {
    if FORMATTING.swap(true, Ordering::SeqCst) {
        return Err(
            "an earlier formatting that ran out of time is still running; try again when it ends"
                .to_string(),
        );
    }
    let (owned_name, owned_text) = (name.to_string(), text.to_string());
    let (sender, receiver) = std::sync::mpsc::channel();
    let started = std::thread::Builder::new()
        .name("mesh-format".into())
        .stack_size(lang::eval::EVAL_STACK_SIZE)
        .spawn(move || {
            let outcome = fixed_point(owned_name, owned_text);
            FORMATTING.store(false, Ordering::SeqCst);
            // the receiver is gone when the caller stopped waiting
            let _unwaited = sender.send(outcome);
        });
    if let Err(error) = started {
        FORMATTING.store(false, Ordering::SeqCst);
        return Err(format!("the formatter cannot start: {error}"));
    }
    receiver.recv_timeout(time_limit).map_err(|_| {
        format!(
            "the formatter did not finish within {} s",
            time_limit.as_secs_f64()
        )
    })
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
                // a build beside the inventory, cargo's output beside its manifest:
                // a module may be called `target` (or `build`)
                let is_build_output = name == "build" && directory.join("mesh.nix").is_file();
                let is_cargo_output = name == "target" && directory.join("Cargo.toml").is_file();
                if !name.starts_with('.') && !is_build_output && !is_cargo_output {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_formatting_past_its_time_limit_is_abandoned_with_e054() {
        // 400 arguments: under the chain bound, and some hundred milliseconds of work
        let text = format!("f {}\n", vec!["a.b"; 400].join(" "));
        let mut sources = Sources::new();
        let refused = format_text("slow.nix", &text, &mut sources, Duration::from_millis(1))
            .expect_err("1 ms is too short");
        assert_eq!(refused[0].code, codes::FORMATTING_TOO_SLOW);
        assert!(
            refused[0].message.contains("did not finish within"),
            "{}",
            refused[0].message
        );
        // the abandoned formatting ends, and the next one is done
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while FORMATTING.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            format_text(
                "fast.nix",
                "{ a = 1; }\n",
                &mut sources,
                Duration::from_secs(60)
            ),
            Ok("{a = 1;}\n".to_string())
        );
    }
}
