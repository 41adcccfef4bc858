//! `meshc eval`: evaluate a file or an expression deeply and print it exactly as
//! `nix-instantiate --eval --strict [--json]` would. The evaluation is
//! `crate::evaluate`'s; this file only reads the arguments and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgGroup, Args};

use crate::cli::{ColorWhen, LimitsArgs};
use crate::evaluate::{Argument, AttrPath, EvalFailure, EvalRequest, Input, evaluate};
use crate::terminal::{self, Failure};

/// Evaluate a file or an expression as `nix-instantiate --eval --strict` would
#[derive(Debug, Args)]
#[command(
    group(ArgGroup::new("input").required(true).args(["file", "expr"])),
    after_help = "\
Examples:
  meshc eval examples/language/hello.nix
  meshc eval --json --expr 'builtins.map (x: x * 2) [ 1 2 3 ]'
  meshc eval -A services.web.port default.nix

`import` and `readFile` reach only below the root: `--root`, else the nearest
directory with `mesh.nix` above the file (or the working directory), else the
file's directory."
)]
pub struct EvalArgs {
    /// The file to evaluate
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Evaluate this expression instead of a file
    #[arg(long, short = 'E', value_name = "EXPR")]
    pub expr: Option<String>,
    /// Print the value at this attribute path instead (`a.b."c.d".0`); given again,
    /// each path's value on its own line, as `nix-instantiate -A`
    #[arg(long = "attr", short = 'A', value_name = "PATH", value_parser = attr_path)]
    pub attr: Vec<AttrPath>,
    /// Give a function's argument NAME the value of EXPR (evaluated when used), as
    /// `nix-instantiate --arg`: the file's function and those `-A` meets
    #[arg(long = "arg", num_args = 2, value_names = ["NAME", "EXPR"], action = clap::ArgAction::Append, value_parser = placed)]
    pub arg: Vec<Placed>,
    /// Give a function's argument NAME the string TEXT, as `nix-instantiate --argstr`
    #[arg(long = "argstr", num_args = 2, value_names = ["NAME", "TEXT"], action = clap::ArgAction::Append, value_parser = placed)]
    pub argstr: Vec<Placed>,
    /// Print the value as JSON (`nix-instantiate --json`)
    #[arg(long)]
    pub json: bool,
    /// Where `import` and `readFile` may reach
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    #[command(flatten)]
    pub limits: LimitsArgs,
    /// Accepted and ignored, for `nix-instantiate` habits (evaluation is always strict)
    #[arg(long, hide = true)]
    pub strict: bool,
    /// Accepted and ignored, for `nix-instantiate` habits
    #[arg(long, hide = true)]
    pub eval: bool,
}

fn attr_path(written: &str) -> Result<AttrPath, String> {
    Ok(AttrPath {
        written: written.to_string(),
        names: lang::eval::parse_attr_path(written)?,
    })
}

/// A value of `--arg` or `--argstr` and its place among all of their values on the
/// command line: the two flags are two lists, and a name given by both keeps the
/// value given last, as in Nix.
#[derive(Clone, Debug)]
pub struct Placed {
    place: usize,
    text: String,
}

/// Counts the values of `--arg` and `--argstr` as clap reads them, which is in
/// their order on the command line (one command line a process).
static PLACES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn placed(text: &str) -> Result<Placed, std::convert::Infallible> {
    Ok(Placed {
        place: PLACES.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        text: text.to_string(),
    })
}

/// `--arg` or `--argstr` given as NAME VALUE, NAME VALUE, ... (clap gives them
/// flat), each made an argument by `kind`, with the place of its name.
fn pairs(
    flat: &[Placed],
    kind: fn(String) -> Argument,
) -> impl Iterator<Item = (usize, String, Argument)> + '_ {
    flat.chunks_exact(2).map(move |pair| {
        (
            pair[0].place,
            pair[0].text.clone(),
            kind(pair[1].text.clone()),
        )
    })
}

pub fn run(arguments: EvalArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    let input = match (arguments.file, arguments.expr) {
        (Some(path), None) => Input::File(path),
        (None, Some(text)) => Input::Expression(text),
        // clap's group `input` lets neither case through
        _ => {
            let diagnostic = terminal::internal(
                "`meshc eval` was given neither or both of FILE and `--expr`".into(),
            );
            return Err(terminal::fail_alone(&diagnostic, color));
        }
    };
    let working_directory = terminal::current_directory(color)?;
    let outcome = evaluate(
        EvalRequest {
            input,
            attr_paths: arguments.attr,
            arguments: {
                let mut given: Vec<_> = pairs(&arguments.arg, Argument::Expression)
                    .chain(pairs(&arguments.argstr, Argument::Text))
                    .collect();
                given.sort_by_key(|(place, _, _)| *place);
                given
                    .into_iter()
                    .map(|(_, name, argument)| (name, argument))
                    .collect()
            },
            json: arguments.json,
            root: arguments.root,
            working_directory,
            limits: arguments.limits.get(),
        },
        std::io::stdout(),
    );
    match outcome.output {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(EvalFailure::Write(error)) => Err(terminal::output_failure(error)),
        Err(EvalFailure::Diagnostics(mut diagnostics)) => {
            diagnostics.iter_mut().for_each(mesh_is_not_here);
            terminal::report(&diagnostics, &outcome.sources, false, color);
            Ok(ExitCode::from(1))
        }
    }
}

/// `mesh` undefined: `meshc eval` evaluates plain Nix, as `nix-instantiate` does,
/// with no `mesh` in scope (a global name would change what `with` finds); modules
/// and `meshc repl` have it, so the help says where to go instead.
fn mesh_is_not_here(diagnostic: &mut lang::Diagnostic) {
    if diagnostic.code == lang::codes::UNDEFINED_VARIABLE
        && diagnostic.message == "undefined variable `mesh`"
    {
        diagnostic.help = Some(
            "`meshc eval` evaluates plain Nix, as `nix-instantiate` does; `mesh` is given to \
             modules and to `meshc repl` (`echo 'EXPR' | meshc repl`)"
                .to_string(),
        );
    }
}
