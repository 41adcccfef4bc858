//! The `meshc repl` session: one line at a time evaluated on the mesh evaluator with
//! the session's names in scope (`mesh`, a node's `node` and `settings`, what `:l`
//! loaded, what `name = expr` bound), each line with a fresh step budget and memory
//! bound so a runaway line ends in a diagnostic and the session goes on. It knows
//! nothing of the terminal: it returns what to print (`complete.rs` and the command
//! do the line editing and the printing).

pub mod complete;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lang::value::Bytes;
use lang::{Diagnostic, Machine, Span, Value, codes};

/// The help `:?` prints.
pub const HELP: &str = "\
The following commands are available:

  <expr>        Evaluate and print an expression
  <x> = <expr>  Bind an expression to a name
  :l <path>     Load the attributes of a file's set into scope
  :t <expr>     Describe the type of an expression
  :?            Print this help
  :q            Exit the session

Names in scope: `mesh` (with `mesh.lib`), the builtins, and with `--node`
the node's `node` and `settings`. Tab completes names and attributes (`x.<TAB>`).
";

/// What one line asks the host to do.
#[derive(Debug)]
pub enum Reply {
    /// Print this on standard output (a value, a type, the help), with a newline.
    Print(String),
    /// Say this on standard error (`Added 3 variables.`).
    Note(String),
    /// Nothing to print (an empty line).
    Nothing,
    /// The line failed: report these diagnostics against [`Session::sources`].
    Failed(Vec<Diagnostic>),
    /// End the session.
    Quit,
}

pub struct Session {
    pub machine: Machine,
    /// The session's names, above the globals.
    pub names: HashMap<Bytes, Value>,
    /// Where relative paths of an expression start: the working directory.
    pub base_directory: PathBuf,
    lines: usize,
}

/// What `:t` prints for a value in weak head normal form.
fn type_name(value: &Value) -> &'static str {
    value.describe_type()
}

/// A binding line `name = expr` (not `==`): the name and the expression.
fn binding(line: &str) -> Option<(&str, &str)> {
    let (name, rest) = line.split_once('=')?;
    let name = name.trim();
    if rest.starts_with('=') || !is_identifier(name) {
        return None;
    }
    Some((name, rest.trim()))
}

/// Whether `text` (one line or more) is an expression or binding the input ended
/// inside of, so the session reads another line before it evaluates anything, as
/// `nix repl` does: a block, string or comment not closed, an operator, `let` or
/// `if` without what follows, `x =` without its value. `:t EXPR` waits for its
/// expression; the other commands never wait. A mistake before the end is not
/// waited on: it is said at once.
pub fn unfinished(text: &str) -> bool {
    let text = text.trim();
    let expression = match text.strip_prefix(':') {
        Some(command) => match command.split_once(char::is_whitespace) {
            // `:t # a comment`: the expression comes on the next line
            Some(("t" | "type", argument)) if lang::parser::only_trivia(argument.as_bytes()) => {
                return true;
            }
            Some(("t" | "type", argument)) => argument,
            _ => return false,
        },
        None => match binding(text) {
            // `x =` (or `x = # a comment`): the value comes on the next line
            Some((_, expression)) if lang::parser::only_trivia(expression.as_bytes()) => {
                return true;
            }
            Some((_, expression)) => expression,
            None => text,
        },
    };
    lang::parser::ends_unfinished(expression.as_bytes())
}

/// Whether `name` may be written bare in the language.
pub fn is_identifier(name: &str) -> bool {
    let mut characters = name.chars();
    matches!(characters.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && characters.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '\'' | '-'))
        && !matches!(
            name,
            "let" | "in" | "with" | "rec" | "inherit" | "if" | "then" | "else" | "assert" | "or"
        )
}

impl Session {
    pub fn new(
        mut machine: Machine,
        names: Vec<(String, Value)>,
        base_directory: PathBuf,
    ) -> Session {
        // in weak head normal form, as the compiler takes a name's value (a name
        // that fails to evaluate is left out: using it says it is undefined)
        let names = names
            .into_iter()
            .filter_map(|(name, value)| {
                let value = machine.force(&value, Span::default()).ok()?;
                Some((lang::value::Bytes::from(name.as_bytes()), value))
            })
            .collect();
        machine.start_next_evaluation();
        Session {
            machine,
            names,
            base_directory,
            lines: 0,
        }
    }

    pub fn sources(&self) -> &lang::Sources {
        &self.machine.sources
    }

    /// `builtins.trace` and `builtins.warn` messages of the last line, as lines to
    /// write on standard error (an age private key in them blotted out, and what
    /// would drive a terminal escaped: a session is read by a person).
    pub fn take_messages(&mut self) -> Vec<String> {
        std::mem::take(&mut self.machine.traces)
            .iter()
            .map(|traced| crate::render::traced_bare(traced, true))
            .collect()
    }

    /// Evaluates `text` (WHNF) with the session's names, on a fresh budget.
    pub fn evaluate(&mut self, text: &str) -> Result<Value, Vec<Diagnostic>> {
        self.lines += 1;
        self.machine.start_next_evaluation();
        let name = format!("«repl {}»", self.lines);
        let base = self.base_directory.clone();
        self.machine.eval_source_in_scope(
            &name,
            std::sync::Arc::from(text.as_bytes()),
            &base,
            &self.names,
        )
    }

    /// Handles one line of input.
    pub fn line(&mut self, line: &str) -> Reply {
        let line = line.trim();
        // a comment alone is nothing to evaluate, as an empty line
        if lang::parser::only_trivia(line.as_bytes()) {
            return Reply::Nothing;
        }
        if let Some(command) = line.strip_prefix(':') {
            return self.command(command);
        }
        if let Some((name, expression)) = binding(line) {
            return match self.evaluate_line(expression) {
                Ok(value) => {
                    self.names
                        .insert(lang::value::Bytes::from(name.as_bytes()), value);
                    Reply::Nothing
                }
                Err(diagnostics) => Reply::Failed(diagnostics),
            };
        }
        match self
            .evaluate_line(line)
            .and_then(|value| self.print(&value))
        {
            Ok(text) => Reply::Print(text),
            Err(diagnostics) => Reply::Failed(diagnostics),
        }
    }

    /// Evaluates `text` (WHNF) as [`Session::evaluate`] does; a mistake said at
    /// once, before the input was finished, is said without the blocks the input
    /// ended inside of (the person had not typed their closers yet).
    fn evaluate_line(&mut self, text: &str) -> Result<Value, Vec<Diagnostic>> {
        self.evaluate(text).map_err(|mut diagnostics| {
            let unfinished = |diagnostic: &Diagnostic| {
                diagnostic.code == codes::SYNTAX_ERROR
                    && diagnostic.message.ends_with("before end of input")
            };
            if diagnostics.iter().any(|diagnostic| !unfinished(diagnostic)) {
                diagnostics.retain(|diagnostic| !unfinished(diagnostic));
            }
            diagnostics
        })
    }

    fn print(&mut self, value: &Value) -> Result<String, Vec<Diagnostic>> {
        match self.machine.print_strict(value) {
            Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
            Err(error) => Err(vec![*error]),
        }
    }

    fn command(&mut self, command: &str) -> Reply {
        let (name, argument) = match command.split_once(char::is_whitespace) {
            Some((name, argument)) => (name, argument.trim()),
            None => (command, ""),
        };
        match name {
            "q" | "quit" => Reply::Quit,
            "?" | "help" => Reply::Print(HELP.trim_end().to_string()),
            "t" | "type" => match self.evaluate(argument) {
                Ok(value) => Reply::Print(type_name(&value).to_string()),
                Err(diagnostics) => Reply::Failed(diagnostics),
            },
            "l" | "load" => self.load(argument),
            other => Reply::Failed(vec![
                Diagnostic::error(
                    codes::UNKNOWN_REPL_COMMAND,
                    format!("unknown command `:{other}`"),
                )
                .with_help(
                    "the commands are `:l FILE`, `:t EXPR`, `:?` and `:q`; `:?` describes them",
                ),
            ]),
        }
    }

    /// `:l FILE`: the attributes of the file's set become names of the session.
    fn load(&mut self, argument: &str) -> Reply {
        if argument.is_empty() {
            return Reply::Failed(vec![
                Diagnostic::error(codes::UNKNOWN_REPL_COMMAND, "`:l` needs a file")
                    .with_help("write `:l FILE`, a file whose value is a set"),
            ]);
        }
        let path = Path::new(argument);
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.base_directory.join(path)
        };
        self.lines += 1;
        self.machine.start_next_evaluation();
        // the command is a source of its own, so that what fails is shown at its
        // file's name (else at the first source the machine has: the prelude's)
        let command = format!(":l {argument}");
        let typed = self.machine.sources.add(
            format!("«repl {}»", self.lines),
            None,
            std::sync::Arc::from(command.as_bytes()),
        );
        let span = Span::new(typed, ":l ".len(), command.len());
        let value = match self.machine.eval_file_at(&path, span) {
            Ok(value) => value,
            Err(diagnostics) => return Reply::Failed(diagnostics),
        };
        let attrs = match self.machine.force(&value, span) {
            Ok(Value::Attrs(attrs)) => attrs,
            Ok(other) => {
                return Reply::Failed(vec![
                    Diagnostic::error(
                        codes::TYPE_MISMATCH,
                        format!("`:l {argument}`: the file's value is {}, not a set", other.describe_type()),
                    )
                    .with_primary(span, "loaded here")
                    .with_help("`:l` loads the attributes of a set; evaluate a file of another value with `import ./FILE`"),
                ]);
            }
            Err(error) => return Reply::Failed(vec![*error]),
        };
        let mut added = 0;
        for attr in attrs.iter() {
            // a name of the session is a value the compiler takes as it is: in weak
            // head normal form, not a thunk
            let value = match self.machine.force(&attr.value, span) {
                Ok(value) => value,
                Err(error) => return Reply::Failed(vec![*error]),
            };
            self.names
                .insert(lang::value::Bytes::from(attr.name.as_bytes()), value);
            added += 1;
        }
        Reply::Note(format!("Added {added} variables."))
    }
}
