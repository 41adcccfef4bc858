//! Command-line flags, parsed raw with lexopt and then validated into a plain `Config`.
//! Must not touch the filesystem or the database: a bad file is found when it is read,
//! so that a watching provisioner can report it and keep polling.

use std::ffi::OsString;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    Human,
    Json,
}

/// Once, or for as long as the process lives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    Once,
    Watch {
        interval: Duration,
        /// Reconcile anyway after this many polls that saw no change (drift repair).
        repair_every: u32,
    },
}

/// What one run of `mesh-provision` is asked to do, validated.
#[derive(Clone, Debug)]
pub struct Config {
    pub manifest: PathBuf,
    /// The connection string as given (URL or `key=value`); checked to parse.
    pub postgres: String,
    pub password_file: Option<PathBuf>,
    /// Where the manifest's absolute credential paths live; `None` is `/`.
    pub root: Option<PathBuf>,
    pub mode: Mode,
    pub format: OutputFormat,
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    Run(Config),
    Help,
    Version,
}

pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);
pub const DEFAULT_REPAIR_EVERY: u32 = 12;

pub const USAGE: &str = "\
usage: mesh-provision --manifest FILE --postgres URL [--password-file FILE] [--root DIR]
                      [--watch [--interval SECS] [--repair-every N]] [--format human|json]

Keeps PostgreSQL logins in step with a mesh grants manifest (`mesh-grants/1`).

  --manifest FILE       the grants manifest, as mesh-apply placed it
  --postgres URL        the server and a superuser to act as:
                        postgres://USER@HOST:PORT/DATABASE or `host=... user=...`
  --password-file FILE  the superuser's password (its first line); wins over a
                        password in URL
  --root DIR            find the manifest's credential paths inside DIR
                        (as `mesh-apply --root DIR` placed them)
  --watch               keep running: poll the manifest and its credentials every
                        interval and reconcile when their digest changes
  --interval SECS       seconds between polls (default 5; fractions allowed)
  --repair-every N      reconcile every N polls even when nothing changed, to repair
                        drift (default 12)
  --format FORMAT       `human` (default) or `json` (one object per reconcile)
  -h, --help            show this help
  -V, --version         show the version

Once: reconcile and exit 0, or 1 when anything failed. Watching never exits on its
own; a problem is reported on stderr and the last good state is kept.
";

/// The flags as given, before validation.
#[derive(Default)]
struct RawArguments {
    manifest: Option<OsString>,
    postgres: Option<String>,
    password_file: Option<OsString>,
    root: Option<OsString>,
    watch: bool,
    interval: Option<String>,
    repair_every: Option<String>,
    format: Option<String>,
    help: bool,
    version: bool,
}

/// Parses and validates the arguments after the program name.
pub fn parse_arguments(arguments: impl IntoIterator<Item = OsString>) -> Result<Command, String> {
    let raw = parse_raw(arguments)?;
    validate(raw)
}

fn parse_raw(arguments: impl IntoIterator<Item = OsString>) -> Result<RawArguments, String> {
    use lexopt::prelude::*;
    let mut raw = RawArguments::default();
    let mut parser = lexopt::Parser::from_args(arguments);
    let describe = |error: lexopt::Error| error.to_string().to_lowercase();
    // a flag's value that must be UTF-8 text
    let text = |parser: &mut lexopt::Parser| -> Result<String, String> {
        parser.value().map_err(describe)?.string().map_err(describe)
    };
    while let Some(argument) = parser.next().map_err(describe)? {
        match argument {
            Long("manifest") => raw.manifest = Some(parser.value().map_err(describe)?),
            Long("password-file") => raw.password_file = Some(parser.value().map_err(describe)?),
            Long("root") => raw.root = Some(parser.value().map_err(describe)?),
            Long("postgres") => raw.postgres = Some(text(&mut parser)?),
            Long("interval") => raw.interval = Some(text(&mut parser)?),
            Long("repair-every") => raw.repair_every = Some(text(&mut parser)?),
            Long("format") => raw.format = Some(text(&mut parser)?),
            Long("watch") => raw.watch = true,
            Short('h') | Long("help") => raw.help = true,
            Short('V') | Long("version") => raw.version = true,
            Value(value) => {
                return Err(format!(
                    "unexpected argument `{}`: every input is a flag",
                    value.to_string_lossy()
                ));
            }
            other => return Err(describe(other.unexpected())),
        }
    }
    Ok(raw)
}

fn validate(raw: RawArguments) -> Result<Command, String> {
    if raw.help {
        return Ok(Command::Help);
    }
    if raw.version {
        return Ok(Command::Version);
    }
    let manifest = PathBuf::from(
        raw.manifest
            .ok_or("missing `--manifest FILE`: the grants manifest")?,
    );
    let postgres = raw
        .postgres
        .ok_or("missing `--postgres URL`: the server to keep in step")?;
    // the message names the flag, never the value: a URL may carry a password
    postgres::Config::from_str(&postgres)
        .map_err(|error| format!("`--postgres` is not a connection string: {error}"))?;
    let root = match raw.root {
        None => None,
        Some(root) if root.is_empty() => return Err("`--root` is empty".to_string()),
        Some(root) => {
            let root = PathBuf::from(root);
            if root == std::path::Path::new("/") {
                None
            } else {
                Some(root)
            }
        }
    };
    let mode = if raw.watch {
        let interval = match raw.interval {
            None => DEFAULT_INTERVAL,
            Some(text) => parse_interval(&text)?,
        };
        let repair_every = match raw.repair_every {
            None => DEFAULT_REPAIR_EVERY,
            Some(text) => match text.parse::<u32>() {
                Ok(count) if count >= 1 => count,
                _ => {
                    return Err(format!(
                        "`--repair-every {text}` is not a whole number of polls of at least 1"
                    ));
                }
            },
        };
        Mode::Watch {
            interval,
            repair_every,
        }
    } else {
        if raw.interval.is_some() {
            return Err("`--interval` needs `--watch`".to_string());
        }
        if raw.repair_every.is_some() {
            return Err("`--repair-every` needs `--watch`".to_string());
        }
        Mode::Once
    };
    let format = match raw.format.as_deref() {
        None | Some("human") => OutputFormat::Human,
        Some("json") => OutputFormat::Json,
        Some(other) => {
            return Err(format!("unknown format `{other}`: use `human` or `json`"));
        }
    };
    Ok(Command::Run(Config {
        manifest,
        postgres,
        password_file: raw.password_file.map(PathBuf::from),
        root,
        mode,
        format,
    }))
}

/// Seconds, fractions allowed, from a millisecond to a day.
fn parse_interval(text: &str) -> Result<Duration, String> {
    let refuse = || format!("`--interval {text}` is not a number of seconds from 0.001 to 86400");
    let seconds: f64 = text.parse().map_err(|_| refuse())?;
    if !(0.001..=86_400.0).contains(&seconds) {
        return Err(refuse());
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(arguments: &[&str]) -> Result<Command, String> {
        parse_arguments(arguments.iter().map(OsString::from))
    }

    fn config(arguments: &[&str]) -> Config {
        match parse(arguments) {
            Ok(Command::Run(config)) => config,
            other => panic!("{other:?}"),
        }
    }

    const BASE: &[&str] = &[
        "--manifest",
        "/etc/mesh/grants/postgres.json",
        "--postgres",
        "postgres://postgres@127.0.0.1:5432/postgres",
    ];

    #[test]
    fn once_is_the_default() {
        let config = config(BASE);
        assert_eq!(config.mode, Mode::Once);
        assert_eq!(config.format, OutputFormat::Human);
        assert_eq!(config.root, None);
    }

    #[test]
    fn the_module_command_line_parses() {
        let mut arguments = BASE.to_vec();
        arguments.extend([
            "--password-file",
            "/run/secrets/superuser",
            "--watch",
            "--interval",
            "5",
        ]);
        let config = config(&arguments);
        assert_eq!(
            config.mode,
            Mode::Watch {
                interval: Duration::from_secs(5),
                repair_every: DEFAULT_REPAIR_EVERY
            }
        );
        assert_eq!(
            config.password_file.as_deref(),
            Some(std::path::Path::new("/run/secrets/superuser"))
        );
    }

    #[test]
    fn fractions_of_a_second_and_a_repair_count() {
        let mut arguments = BASE.to_vec();
        arguments.extend(["--watch", "--interval", "0.25", "--repair-every", "3"]);
        assert_eq!(
            config(&arguments).mode,
            Mode::Watch {
                interval: Duration::from_millis(250),
                repair_every: 3
            }
        );
    }

    #[test]
    fn refusals_name_the_flag() {
        let cases: &[(&[&str], &str)] = &[
            (&["--postgres", "postgres://x"], "--manifest"),
            (&["--manifest", "m"], "--postgres"),
            (
                &[
                    "--manifest",
                    "m",
                    "--postgres",
                    "postgres://x",
                    "--interval",
                    "1",
                ],
                "needs `--watch`",
            ),
            (
                &[
                    "--manifest",
                    "m",
                    "--postgres",
                    "postgres://x",
                    "--watch",
                    "--interval",
                    "0",
                ],
                "--interval 0",
            ),
            (
                &[
                    "--manifest",
                    "m",
                    "--postgres",
                    "postgres://x",
                    "--watch",
                    "--interval",
                    "NaN",
                ],
                "--interval NaN",
            ),
            (
                &[
                    "--manifest",
                    "m",
                    "--postgres",
                    "postgres://x",
                    "--watch",
                    "--repair-every",
                    "0",
                ],
                "--repair-every 0",
            ),
            (
                &[
                    "--manifest",
                    "m",
                    "--postgres",
                    "postgres://x",
                    "--format",
                    "xml",
                ],
                "xml",
            ),
            (
                &["--manifest", "m", "--postgres", "postgres://x", "stray"],
                "stray",
            ),
        ];
        for (arguments, expected) in cases {
            let error = parse(arguments).expect_err("refused");
            assert!(error.contains(expected), "{arguments:?}: {error}");
        }
    }

    #[test]
    fn a_bad_connection_string_is_refused_without_echoing_it() {
        let error = parse(&[
            "--manifest",
            "m",
            "--postgres",
            "postgres://postgres:hunter2@127.0.0.1:notaport/postgres",
        ])
        .expect_err("refused");
        assert!(error.contains("--postgres"), "{error}");
        assert!(!error.contains("hunter2"), "{error}");
    }
}
