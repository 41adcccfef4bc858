//! The `meshc` binary: parses the command line and runs one command.
#![forbid(unsafe_code)]

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use compiler::evaluate::{EvalRequest, Input, evaluate};
use compiler::render;

const USAGE: &str = "\
usage: meshc <command> [options]

commands:
  eval [--json] [--trace] [--root DIR] FILE    evaluate a file like `nix-instantiate --eval --strict`
  eval [--json] [--trace] --expr EXPR          evaluate an expression
";

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}\n\n{USAGE}");
            ExitCode::from(1)
        }
    }
}

fn run() -> Result<ExitCode, String> {
    let mut arguments = std::env::args_os().skip(1);
    let Some(command) = arguments.next() else {
        return Err("no command given".into());
    };
    let rest: Vec<std::ffi::OsString> = arguments.collect();
    match command.to_str() {
        Some("eval") => eval_command(rest),
        Some("help") | Some("--help") | Some("-h") => {
            print!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        Some(other) => Err(format!("unknown command `{other}`")),
        None => Err("the command is not valid UTF-8".into()),
    }
}

fn eval_command(arguments: Vec<std::ffi::OsString>) -> Result<ExitCode, String> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(arguments);
    let mut json = false;
    let mut trace = false;
    let mut root = None;
    let mut expression = None;
    let mut file = None;
    while let Some(argument) = parser.next().map_err(|e| e.to_string())? {
        match argument {
            Long("json") => json = true,
            Long("trace") => trace = true,
            Long("strict") | Long("eval") => {}
            Long("root") => root = Some(PathBuf::from(parser.value().map_err(|e| e.to_string())?)),
            Long("expr") | Short('E') => {
                expression = Some(
                    parser
                        .value()
                        .map_err(|e| e.to_string())?
                        .string()
                        .map_err(|e| format!("{e:?}"))?,
                )
            }
            Value(value) if file.is_none() => file = Some(PathBuf::from(value)),
            other => return Err(other.unexpected().to_string()),
        }
    }
    let input = match (file, expression) {
        (Some(path), None) => Input::File(path),
        (None, Some(text)) => Input::Expression(text),
        _ => return Err("give either a FILE or --expr EXPR".into()),
    };
    let working_directory = std::env::current_dir().map_err(|e| e.to_string())?;
    let outcome = evaluate(EvalRequest {
        input,
        json,
        root,
        working_directory,
    });
    let mut stderr = std::io::stderr();
    for message in &outcome.traces {
        let _ = writeln!(stderr, "trace: {message}");
    }
    match outcome.output {
        Ok(bytes) => {
            let mut stdout = std::io::stdout();
            stdout.write_all(&bytes).map_err(|e| e.to_string())?;
            Ok(ExitCode::SUCCESS)
        }
        Err(diagnostics) => {
            let color = stderr.is_terminal();
            for diagnostic in &diagnostics {
                let _ = write!(
                    stderr,
                    "{}",
                    render::render(diagnostic, &outcome.sources, trace, color)
                );
            }
            Ok(ExitCode::from(1))
        }
    }
}
