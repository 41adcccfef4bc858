//! Command-line flags, parsed raw with clap (one definition, which also gives `--help`,
//! `--version` and usage errors that exit 2) and then validated into a plain `Config`.
//! Must not touch the filesystem or the database: a bad file is found when it is read,
//! so that a watching provisioner can report it and keep polling.

use std::ffi::OsString;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, ValueEnum};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// for people
    Human,
    /// for tools: one JSON object per reconcile
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

/// The server a provisioner keeps in step, and how to reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The connection string as given (URL or `key=value`); checked to parse.
    Postgres(String),
    /// RabbitMQ's management HTTP API and the administrator to act as.
    Rabbitmq(crate::rabbitmq::Endpoint),
}

/// What one run of `mesh-provision` is asked to do, validated.
#[derive(Clone, Debug)]
pub struct Config {
    pub manifest: PathBuf,
    pub target: Target,
    pub password_file: Option<PathBuf>,
    /// Where the manifest's absolute credential paths live; `None` is `/`.
    pub root: Option<PathBuf>,
    pub mode: Mode,
    pub format: OutputFormat,
}

/// What the command line asks for (`--help` and `--version` are clap's).
#[derive(Debug)]
pub enum Command {
    Run(Config),
}

pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);
pub const DEFAULT_REPAIR_EVERY: u32 = 12;

const EXAMPLES: &str = "\
Examples:
  mesh-provision --manifest /etc/mesh/grants/postgres.json --postgres postgres://postgres@127.0.0.1/postgres
  mesh-provision --manifest M --postgres 'host=/run/postgresql user=postgres' --watch --interval 5
  mesh-provision --manifest /etc/mesh/grants/amqp.json --rabbitmq http://admin@127.0.0.1:15672 --password-file /run/secrets/administrator

Once: reconcile and exit 0, or 1 when anything failed; 2 is a usage error. Watching
never exits on its own; a problem is reported on stderr and the last good state is
kept.";

/// Keeps PostgreSQL or RabbitMQ logins in step with a mesh grants manifest
/// (`mesh-grants/1`): creates, updates and disables the logins it manages, never
/// touches other roles or users.
#[derive(Debug, Parser)]
#[command(
    name = "mesh-provision",
    version,
    arg_required_else_help = true,
    args_override_self = true,
    after_help = EXAMPLES
)]
struct RawArguments {
    /// The grants manifest, as mesh-apply placed it
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    /// The server and a superuser to act as: postgres://USER@HOST:PORT/DATABASE or
    /// `host=... user=...`
    #[arg(long, value_name = "URL", conflicts_with = "rabbitmq")]
    postgres: Option<String>,
    /// RabbitMQ's management API and an administrator to act as:
    /// http://USER@HOST:PORT (the password comes from `--password-file`)
    #[arg(long, value_name = "URL")]
    rabbitmq: Option<String>,
    /// The superuser's or administrator's password (its first line); wins over a
    /// password in a `--postgres` URL
    #[arg(long, value_name = "FILE")]
    password_file: Option<PathBuf>,
    /// Find the manifest's credential paths inside DIR (as `mesh-apply --root DIR`
    /// placed them)
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Keep running: poll the manifest and its credentials every interval and
    /// reconcile when their digest changes
    #[arg(long)]
    watch: bool,
    /// Seconds between polls, with `--watch` (default 5; fractions allowed)
    #[arg(long, value_name = "SECONDS")]
    interval: Option<String>,
    /// Reconcile every N polls even when nothing changed, to repair drift, with
    /// `--watch` (default 12)
    #[arg(long, value_name = "N")]
    repair_every: Option<String>,
    /// `human`, or `json` (one object per reconcile)
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = OutputFormat::Human)]
    format: OutputFormat,
}

/// The definition of the command line, for the help, the book's check and tests.
pub fn command() -> clap::Command {
    RawArguments::command()
}

/// Parses and validates the arguments after the program name. A usage error (clap's,
/// or a validation's) is a `clap::Error`: `exit()` prints it and exits 2, or prints
/// the help or version and exits 0.
pub fn parse_arguments(
    arguments: impl IntoIterator<Item = OsString>,
) -> Result<Command, clap::Error> {
    let raw = RawArguments::try_parse_from(
        std::iter::once(OsString::from("mesh-provision")).chain(arguments),
    )?;
    validate(raw)
        .map_err(|message| RawArguments::command().error(ErrorKind::ValueValidation, message))
}

fn validate(raw: RawArguments) -> Result<Command, String> {
    let manifest = raw
        .manifest
        .ok_or("missing `--manifest FILE`: the grants manifest")?;
    let target = match (raw.postgres, raw.rabbitmq) {
        (Some(postgres), None) => {
            // the message names the flag, never the value: a URL may carry a password
            postgres::Config::from_str(&postgres)
                .map_err(|error| format!("`--postgres` is not a connection string: {error}"))?;
            Target::Postgres(postgres)
        }
        (None, Some(url)) => {
            if raw.password_file.is_none() {
                return Err(
                    "`--rabbitmq` needs `--password-file FILE`: the administrator's password"
                        .to_string(),
                );
            }
            Target::Rabbitmq(crate::rabbitmq::Endpoint::parse(&url)?)
        }
        (None, None) => {
            return Err(
                "missing `--postgres URL` or `--rabbitmq URL`: the server to keep in step"
                    .to_string(),
            );
        }
        (Some(_), Some(_)) => {
            return Err("`--postgres` and `--rabbitmq`: one server per provisioner".to_string());
        }
    };
    let root = match raw.root {
        None => None,
        Some(root) if root.as_os_str().is_empty() => return Err("`--root` is empty".to_string()),
        Some(root) => {
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
    let format = raw.format;
    Ok(Command::Run(Config {
        manifest,
        target,
        password_file: raw.password_file,
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
        parse_arguments(arguments.iter().map(OsString::from)).map_err(|error| error.to_string())
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
    fn rabbitmq_takes_an_administrator_and_a_password_file() {
        let config = config(&[
            "--manifest",
            "/etc/mesh/grants/amqp.json",
            "--rabbitmq",
            "http://administrator@127.0.0.1:15672",
            "--password-file",
            "/run/secrets/administrator",
        ]);
        assert_eq!(
            config.target,
            Target::Rabbitmq(crate::rabbitmq::Endpoint {
                base: "http://127.0.0.1:15672".to_string(),
                user: "administrator".to_string(),
            })
        );
        for (arguments, expected) in [
            (
                &["--manifest", "m", "--rabbitmq", "http://a@h:1"][..],
                "needs `--password-file",
            ),
            (
                &[
                    "--manifest",
                    "m",
                    "--rabbitmq",
                    "http://a@h:1",
                    "--postgres",
                    "postgres://x",
                ][..],
                "cannot be used with",
            ),
            (
                &[
                    "--manifest",
                    "m",
                    "--rabbitmq",
                    "http://a:hunter2@h:1",
                    "--password-file",
                    "p",
                ][..],
                "holds a password",
            ),
        ] {
            let error = parse(arguments).unwrap_err();
            assert!(error.contains(expected), "{arguments:?}: {error}");
            assert!(!error.contains("hunter2"), "{error}");
        }
    }

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
