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

/// Why a command ends without its result.
#[derive(Debug)]
pub enum Failure {
    /// Already reported (diagnostics were written): exit 1.
    Reported,
    /// A message to write as `error: MESSAGE`: exit 1.
    Message(String),
    /// Standard output was closed by its reader: exit 0, quietly.
    ClosedOutput,
}

impl Failure {
    /// Reports what is left to report and gives the exit status.
    pub fn exit_code(self) -> ExitCode {
        match self {
            Failure::Reported => ExitCode::from(1),
            Failure::Message(message) => {
                say!("error: {message}");
                ExitCode::from(1)
            }
            Failure::ClosedOutput => ExitCode::SUCCESS,
        }
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::Message(message)
    }
}

impl From<std::io::Error> for Failure {
    fn from(error: std::io::Error) -> Failure {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            Failure::ClosedOutput
        } else {
            Failure::Message(format!("cannot write the output: {error}"))
        }
    }
}

/// Writes a command's result to standard output and flushes it.
pub fn print(bytes: impl AsRef<[u8]>) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes.as_ref())?;
    stdout.flush()?;
    Ok(())
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

pub fn report(
    diagnostics: &[lang::Diagnostic],
    sources: &lang::Sources,
    trace: bool,
    color: ColorWhen,
) {
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
