//! `meshc repl`: an interactive session on the mesh evaluator, as `nix repl` is on
//! Nix's. On a terminal it edits lines with rustyline (completion, history under
//! `$XDG_STATE_HOME/mesh/repl-history`); otherwise it reads one expression a line
//! (or over several, while one is left open) and prints each value, so it can be
//! scripted. The evaluation is `crate::repl`'s;
//! this file only reads lines and prints.

use std::cell::RefCell;
use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;

use clap::Args;

use crate::cli::{ColorWhen, LimitsArgs};
use crate::repl::complete::ReplHelper;
use crate::repl::{Reply, Session};
use crate::say;
use crate::terminal::{self, Failure};

/// Evaluate expressions interactively, as `nix repl` does
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  meshc repl
  meshc repl --node web-1
  echo 'mesh.lib.optional true 1' | meshc repl

In scope: `mesh` (with `mesh.lib`) and the builtins; with `--node`, the node's
`node` (its inventory entry) and `settings` (each of its modules' effective settings).
`:l FILE` loads a set's attributes, `:t EXPR` gives a type, `:?` helps, `:q` quits.
An expression left open at the end of a line (a `{`, `[`, `(` or string not
closed, `let` without `in`, `x =` without a value) goes on over the next lines.
Each expression has its own step budget and memory bound. When standard input is
not a terminal, each expression is evaluated and its value printed; the status is
1 if one failed.")]
pub struct ReplArgs {
    /// The repository; default: the nearest directory with `mesh.nix` at or above the
    /// current one, else the current directory
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Put this node's `node` and `settings` in scope
    #[arg(long, value_name = "NODE")]
    pub node: Option<String>,
    #[command(flatten)]
    pub limits: LimitsArgs,
}

/// Where the history is kept: `$XDG_STATE_HOME/mesh/repl-history`, else
/// `~/.local/state/mesh/repl-history`.
fn history_file() -> Option<PathBuf> {
    Some(
        crate::cli::state_directory()?
            .join("mesh")
            .join("repl-history"),
    )
}

pub fn run(arguments: ReplArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    let working_directory = terminal::current_directory(color)?;
    let root = match &arguments.repo {
        Some(root) => working_directory.join(root),
        None => {
            compiler::find_root(&working_directory).unwrap_or_else(|| working_directory.clone())
        }
    };
    let limits = arguments.limits.get();
    let node = arguments.node.clone();
    lang::eval::run_with_stack(move || {
        let scope = match compiler::interactive_scope(&root, node.as_deref(), limits) {
            Ok(scope) => scope,
            Err(failure) => {
                let sources = failure
                    .machine
                    .map(|machine| machine.sources)
                    .unwrap_or_default();
                terminal::report(&failure.diagnostics, &sources, false, color);
                return Err(Failure::Reported);
            }
        };
        let session = Session::new(scope.machine, scope.names, working_directory);
        if std::io::stdin().is_terminal() {
            interactive(session, color)
        } else {
            piped(session, color)
        }
    })
    .unwrap_or_else(|diagnostic| Err(terminal::fail_alone(&diagnostic, color)))
}

/// Prints what a line gave; false if it failed.
fn show(session: &mut Session, reply: &Reply, color: ColorWhen) -> Result<bool, Failure> {
    for message in session.take_messages() {
        say!("{message}");
    }
    match reply {
        // a value holds the repository's text: a session is read by a person, so
        // nothing in it drives the terminal (lines kept, the rest escaped)
        Reply::Print(text) => {
            let lines: Vec<_> = text.split('\n').map(plan::display::escaped).collect();
            terminal::print(format!("{}\n", lines.join("\n")))?
        }
        Reply::Note(text) => say!("{text}"),
        Reply::Failed(diagnostics) => {
            terminal::report(diagnostics, session.sources(), false, color);
            return Ok(false);
        }
        Reply::Nothing | Reply::Quit => {}
    }
    Ok(true)
}

/// E057: the session's input cannot be read; the lines read before were evaluated.
fn input_unreadable(message: String) -> lang::Diagnostic {
    lang::Diagnostic::error(lang::codes::REPL_INPUT_UNREADABLE, message).with_help(
        "give `meshc repl` a terminal, or pipe it text with one expression a line (`echo '1 + 1' | meshc repl`)",
    )
}

/// One expression a line; an expression the line ended inside of
/// ([`crate::repl::unfinished`]) goes on over the next lines, and one the input
/// ended inside of is evaluated as it is, for its error.
fn piped(mut session: Session, color: ColorWhen) -> Result<ExitCode, Failure> {
    let mut failed = false;
    let mut pending = String::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|error| {
            let message = format!("cannot read standard input: {error}");
            terminal::fail_alone(&input_unreadable(message), color)
        })?;
        if !pending.is_empty() {
            pending.push('\n');
        }
        pending.push_str(&line);
        if crate::repl::unfinished(&pending) {
            continue;
        }
        let reply = session.line(&std::mem::take(&mut pending));
        if matches!(reply, Reply::Quit) {
            return Ok(super::status(failed));
        }
        failed |= !show(&mut session, &reply, color)?;
    }
    if !pending.trim().is_empty() {
        let reply = session.line(&pending);
        failed |= !show(&mut session, &reply, color)?;
    }
    Ok(super::status(failed))
}

fn interactive(session: Session, color: ColorWhen) -> Result<ExitCode, Failure> {
    use rustyline::config::{CompletionType, Config};
    use rustyline::error::ReadlineError;
    let session = Rc::new(RefCell::new(session));
    let config = Config::builder()
        .completion_type(CompletionType::List)
        .auto_add_history(false)
        .build();
    let mut editor =
        rustyline::Editor::<ReplHelper, rustyline::history::DefaultHistory>::with_config(config)
            .map_err(|error| {
                let message = format!("cannot start the line editor: {error}");
                terminal::fail_alone(&input_unreadable(message), color)
            })?;
    editor.set_helper(Some(ReplHelper {
        session: session.clone(),
    }));
    let history = history_file();
    if let Some(file) = &history {
        // no history yet is the usual first start
        let _ = editor.load_history(file);
    }
    say!("meshc repl: `:?` for help, `:q` to quit");
    loop {
        let line = match editor.readline("mesh-repl> ") {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(error) => {
                let message = format!("cannot read a line: {error}");
                return Err(terminal::fail_alone(&input_unreadable(message), color));
            }
        };
        if !line.trim().is_empty() {
            let _ = editor.add_history_entry(line.as_str());
        }
        let mut session = session.borrow_mut();
        let reply = session.line(&line);
        if matches!(reply, Reply::Quit) {
            break;
        }
        show(&mut session, &reply, color)?;
    }
    if let Some(file) = &history {
        let saved = file
            .parent()
            .map(std::fs::create_dir_all)
            .transpose()
            .map_err(|error| error.to_string())
            .and_then(|_| editor.save_history(file).map_err(|error| error.to_string()));
        if let Err(error) = saved {
            say!(
                "warning: cannot save the history in `{}`: {error}",
                file.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
