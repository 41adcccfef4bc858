//! Tab completion for `meshc repl`: names in scope (the session's, the globals, the
//! keywords, the `:` commands) and the attributes of a set (`x.a.<TAB>`). Finding a
//! set's attributes evaluates the path before the last dot, on a fresh budget; a
//! path that fails offers nothing. It prints nothing and changes no name.

use std::cell::RefCell;
use std::rc::Rc;

use lang::{Span, Value};
use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Helper};

use super::{Session, is_identifier};

const KEYWORDS: &[&str] = &[
    "assert", "else", "if", "in", "inherit", "let", "or", "rec", "then", "with",
];
const COMMANDS: &[&str] = &[":?", ":help", ":l", ":load", ":q", ":quit", ":t", ":type"];

/// Whether `character` may be part of a name or an attribute path being completed.
fn in_word(character: char) -> bool {
    character.is_ascii_alphanumeric() || matches!(character, '_' | '\'' | '-' | '.')
}

/// Where the word before `position` starts, and the completions of it: each the
/// text to put in place of the part after the word's last dot.
pub fn candidates(session: &mut Session, line: &str, position: usize) -> (usize, Vec<String>) {
    let before = &line[..position];
    if before.starts_with(':') && !before.contains(char::is_whitespace) {
        let found = COMMANDS
            .iter()
            .filter(|command| command.starts_with(before))
            .map(|command| command.to_string())
            .collect();
        return (0, found);
    }
    let start = before
        .char_indices()
        .rev()
        .find(|(_, character)| !in_word(*character))
        .map(|(index, character)| index + character.len_utf8())
        .unwrap_or(0);
    let word = &before[start..];
    let mut found = match word.rsplit_once('.') {
        Some((path, partial)) => {
            let start_of_partial = position - partial.len();
            let mut names = attributes(session, path);
            names.retain(|name| name.starts_with(partial));
            names.sort();
            names.dedup();
            let quoted = names
                .into_iter()
                .map(|name| {
                    if is_identifier(&name) {
                        name
                    } else {
                        format!("{name:?}")
                    }
                })
                .collect();
            return (start_of_partial, quoted);
        }
        None => names_in_scope(session),
    };
    found.retain(|name| name.starts_with(word));
    found.sort();
    found.dedup();
    (start, found)
}

fn names_in_scope(session: &Session) -> Vec<String> {
    let mut names: Vec<String> = session
        .names
        .keys()
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect();
    names.extend(session.machine.global_names());
    names.extend(KEYWORDS.iter().map(|keyword| keyword.to_string()));
    names
}

/// The attribute names of the set at `path` (`x.a`), or none.
fn attributes(session: &mut Session, path: &str) -> Vec<String> {
    if path.is_empty() || !path.split('.').all(is_identifier) {
        return Vec::new();
    }
    let value = session
        .evaluate(path)
        .ok()
        .and_then(|value| session.machine.force(&value, Span::default()).ok());
    // what evaluating the path traced is not the user's line: drop it
    let _ = session.take_messages();
    match value {
        Some(Value::Attrs(attrs)) => attrs
            .iter()
            .map(|attr| String::from_utf8_lossy(&attr.name).into_owned())
            .collect(),
        _ => Vec::new(),
    }
}

/// The line editor's helper: completion from the shared session.
pub struct ReplHelper {
    pub session: Rc<RefCell<Session>>,
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        position: usize,
        _context: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let Ok(mut session) = self.session.try_borrow_mut() else {
            return Ok((position, Vec::new()));
        };
        let (start, found) = candidates(&mut session, line, position);
        Ok((
            start,
            found
                .into_iter()
                .map(|name| Pair {
                    display: name.clone(),
                    replacement: name,
                })
                .collect(),
        ))
    }
}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Highlighter for ReplHelper {}

/// Enter inserts a line break while the input is [`super::unfinished`]: a block
/// written over several lines is edited, evaluated and kept in the history as one.
impl Validator for ReplHelper {
    fn validate(&self, context: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        Ok(if super::unfinished(context.input()) {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl Helper for ReplHelper {}
