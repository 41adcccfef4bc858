//! Where `meshc` meets the terminal: whether to colour, diagnostics on standard
//! error, results on standard output, and how a command fails. A closed standard
//! output (`meshc check --format json | head -c1`) ends the program quietly with
//! status 0, as ripgrep does; nothing here panics on a write.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use crate::cli::ColorWhen;
use crate::render;

/// Writes a line to standard error, ignoring a closed standard error (`eprintln!`
/// would panic).
#[macro_export]
macro_rules! say {
    ($($argument:tt)*) => {{
        use std::io::Write as _;
        // the line is made first and written at once: one write, not one per piece
        // of the format (stderr is unbuffered), so no other output cuts into it
        let mut line = format!($($argument)*);
        line.push('\n');
        let _ = std::io::stderr().write_all(line.as_bytes());
    }};
}

/// Why a command ends without its result. Every failure the user is told of is a
/// diagnostic with a code: there is no variant for a bare message.
#[derive(Debug)]
pub enum Failure {
    /// Already reported (diagnostics were written): exit 1.
    Reported,
    /// A diagnostic without sources to report at the end, where the colour is
    /// known (a write to standard output that failed): exit 1.
    Unreported(Box<lang::Diagnostic>),
    /// Standard output was closed by its reader: exit 0, quietly.
    ClosedOutput,
}

impl Failure {
    /// Reports what is left to report and gives the exit status.
    pub fn exit_code(self, color: ColorWhen) -> ExitCode {
        match self {
            Failure::Reported => ExitCode::from(1),
            Failure::Unreported(diagnostic) => {
                fail_alone(&diagnostic, color);
                ExitCode::from(1)
            }
            Failure::ClosedOutput => ExitCode::SUCCESS,
        }
    }
}

/// A write to standard output that failed: quietly done when its reader closed it
/// (a broken pipe), else E056.
pub fn output_failure(error: std::io::Error) -> Failure {
    if error.kind() == std::io::ErrorKind::BrokenPipe {
        return Failure::ClosedOutput;
    }
    Failure::Unreported(Box::new(
        lang::Diagnostic::error(
            lang::codes::OUTPUT_STREAM_UNWRITABLE,
            format!("cannot write to standard output: {error}"),
        )
        .with_help(
            "send the output where it can be written (a file on a disk with room, a pipe to a running program); the output is incomplete",
        ),
    ))
}

/// Writes a command's result to standard output and flushes it.
pub fn print(bytes: impl AsRef<[u8]>) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes.as_ref()).map_err(output_failure)?;
    stdout.flush().map_err(output_failure)?;
    Ok(())
}

/// Writes a document built from the repository's text (`meshc show`, `meshc
/// options`): age private keys blotted out, as in every diagnostic and diff, and
/// no character that would drive the terminal (escape sequences, carriage returns,
/// bidirectional overrides) printed raw, since a hostile module or inventory wrote
/// that text. JSON keeps its meaning (`\uXXXX` escapes); other text keeps its lines
/// and tabs and writes the rest as `\u{HEX}`.
pub fn print_document(text: &str, json: bool) -> Result<(), Failure> {
    let redacted = compiler::redact_private_keys(text);
    if json {
        return print(plan::display::json_escaped(&redacted).as_bytes());
    }
    // a tab is layout, as a newline is (a description indented with tabs)
    let lines: Vec<String> = redacted
        .split('\n')
        .map(|line| {
            line.split('\t')
                .map(plan::display::escaped)
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect();
    print(lines.join("\n"))
}

/// The working directory, E113 when it cannot be read (it was removed, or a
/// directory on the way to it may not be searched).
pub fn current_directory(color: ColorWhen) -> Result<std::path::PathBuf, Failure> {
    std::env::current_dir().map_err(|error| {
        let diagnostic = lang::Diagnostic::error(
            lang::codes::CURRENT_DIRECTORY_UNREADABLE,
            format!("cannot read the current directory: {error}"),
        )
        .with_help(
            "run meshc from a directory that exists and you may enter (it may have been removed since the shell entered it), or pass the paths the command takes (`--repo DIR`, `--out DIR`)",
        );
        fail_alone(&diagnostic, color)
    })
}

/// `value` as pretty JSON with a final newline, for `--format json`. The views
/// printed are strings, numbers and maps with string keys, which cannot fail to be
/// written: a failure is E900. What they hold comes from the repository, so the
/// characters JSON writers leave raw that would drive a terminal (bidirectional
/// controls, C1 controls, DEL) are written as `\uXXXX`: the JSON means the same.
pub fn pretty_json<T: serde::Serialize + ?Sized>(
    value: &T,
    what: &str,
    color: ColorWhen,
) -> Result<String, Failure> {
    match serde_json::to_string_pretty(value) {
        Ok(text) => {
            let mut text = plan::display::json_escaped(&text).into_owned();
            text.push('\n');
            Ok(text)
        }
        Err(error) => Err(fail_alone(
            &internal(format!("{what} cannot be written as JSON: {error}")),
            color,
        )),
    }
}

/// E900 for a branch that cannot be taken: a bug in meshc.
pub fn internal(message: String) -> lang::Diagnostic {
    lang::Diagnostic::bug(message)
}

impl ColorWhen {
    /// Whether to colour what goes to `stream`: `auto` colours a terminal unless
    /// `NO_COLOR` is set to something (<https://no-color.org>).
    pub fn colour(self, stream: &impl IsTerminal) -> bool {
        match self {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => {
                stream.is_terminal()
                    && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
            }
        }
    }
}

/// Writes diagnostics to standard error, rendered against their sources.
/// The compilation's `builtins.trace` and `builtins.warn` messages on standard
/// error, one a line, before its diagnostics.
pub fn traces(traces: &[lang::Traced], sources: &lang::Sources) {
    for traced in traces {
        crate::say!("{}", crate::render::traced(traced, sources));
    }
}

/// Whether `--trace` was given: every command that reports diagnostics shows their
/// whole traces then, as the hint after a cut trace says.
static FULL_TRACES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sets what [`report`] does with traces for the rest of the process.
pub fn show_full_traces(full: bool) {
    FULL_TRACES.store(full, std::sync::atomic::Ordering::Relaxed);
}

/// Writes diagnostics to standard error; `trace` (or `--trace`) shows every frame.
pub fn report(
    diagnostics: &[lang::Diagnostic],
    sources: &lang::Sources,
    trace: bool,
    color: ColorWhen,
) {
    let trace = trace || FULL_TRACES.load(std::sync::atomic::Ordering::Relaxed);
    let mut stderr = std::io::stderr();
    let colour = color.colour(&stderr);
    for diagnostic in diagnostics {
        let _ = write!(
            stderr,
            "{}",
            render::render(diagnostic, sources, trace, colour)
        );
    }
}

/// Reports one diagnostic that ends the command.
pub fn fail(diagnostic: &lang::Diagnostic, sources: &lang::Sources, color: ColorWhen) -> Failure {
    report(std::slice::from_ref(diagnostic), sources, false, color);
    Failure::Reported
}

/// [`fail`] for a diagnostic that has no sources (a build output, the lock file).
pub fn fail_alone(diagnostic: &lang::Diagnostic, color: ColorWhen) -> Failure {
    fail(diagnostic, &lang::Sources::new(), color)
}
