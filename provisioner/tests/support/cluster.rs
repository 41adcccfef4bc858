//! A throwaway PostgreSQL cluster for one test, made with this machine's own PostgreSQL
//! binaries (`/usr/lib/postgresql/VERSION/bin`, or `MESH_TEST_POSTGRES_BIN`): `initdb`
//! into a temporary directory, `pg_ctl start` on a free port of 127.0.0.1, stopped and
//! removed when dropped. Shared by `provisioner/tests/` and `tests/tests/provision*.rs`
//! (included by path), so it uses only std and `tempfile`. Must never skip: a cluster
//! that cannot be made fails the test with the reason and the server's log.
//!
//! Why not the server at 127.0.0.1:5432: its pg_hba.conf trusts every login, so it
//! cannot show that a password works or is refused, and a provisioner disables every
//! managed role its manifest does not name, so two tests sharing one server would
//! disable each other's roles. Here each test has its own cluster:
//! - logins over TCP (127.0.0.1) need SCRAM-SHA-256, the superuser `postgres` included
//!   (its password is in `password_file()`, which is how the provisioner is run);
//!   connections over the cluster's own Unix socket are trusted, for the harness only;
//! - `log_statement = all`, `log_connections` and `log_disconnections` are on, and the
//!   server log is `server_log()`;
//! - durability is off (`fsync`, `synchronous_commit`, `full_page_writes`): the cluster
//!   lives for one test on a loaded two-core machine.
//!
//! PostgreSQL refuses to run as root, so when the tests run as root the binaries run as
//! the `postgres` user (`runuser -u postgres`), and the directory is given to it.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// Generous: the machine has two cores and other builds on them.
const START_TIMEOUT_SECONDS: u32 = 180;
const CONNECT_TIMEOUT_SECONDS: u32 = 60;

pub struct Cluster {
    directory: tempfile::TempDir,
    bin: PathBuf,
    /// `Some(user)` when the binaries run as that user (the tests run as root).
    run_as: Option<String>,
    pub port: u16,
    superuser_password: String,
    running: bool,
}

impl Cluster {
    /// Makes and starts a new cluster.
    pub fn start() -> Cluster {
        let bin = postgres_bin();
        let run_as = if current_uid() == 0 {
            Some("postgres".to_string())
        } else {
            None
        };
        let parent = if run_as.is_some() {
            // the postgres user must reach it: not a root-only TMPDIR
            PathBuf::from("/tmp")
        } else {
            std::env::temp_dir()
        };
        let directory = tempfile::Builder::new()
            .prefix("mesh-provision-pg-")
            .tempdir_in(&parent)
            .unwrap_or_else(|error| panic!("cannot make a directory in {parent:?}: {error}"));
        if let Some(user) = &run_as {
            let (uid, gid) = user_ids(user);
            std::os::unix::fs::chown(directory.path(), Some(uid), Some(gid)).unwrap_or_else(
                |error| panic!("cannot give {:?} to {user}: {error}", directory.path()),
            );
        }
        let superuser_password = format!("super-{}-{}", std::process::id(), nanos());
        let password_file = directory.path().join("superuser-password");
        std::fs::write(&password_file, format!("{superuser_password}\n")).expect("password file");
        if let Some(user) = &run_as {
            let (uid, gid) = user_ids(user);
            std::os::unix::fs::chown(&password_file, Some(uid), Some(gid)).expect("chown");
        }
        let mut cluster = Cluster {
            directory,
            bin,
            run_as,
            port: 0,
            superuser_password,
            running: false,
        };
        cluster.initdb();
        // a port that was free a moment ago may be taken by the time the server binds it
        let mut failures = Vec::new();
        for _ in 0..5 {
            cluster.port = free_port();
            match cluster.try_start() {
                Ok(()) => {
                    cluster.running = true;
                    cluster.wait_until_it_answers();
                    return cluster;
                }
                Err(reason) => failures.push(reason),
            }
        }
        panic!(
            "PostgreSQL did not start in {:?}:\n{}\n--- server log ---\n{}",
            cluster.directory.path(),
            failures.join("\n"),
            cluster.server_log()
        );
    }

    pub fn path(&self) -> &Path {
        self.directory.path()
    }

    pub fn data_directory(&self) -> PathBuf {
        self.directory.path().join("data")
    }

    fn log_path(&self) -> PathBuf {
        self.directory.path().join("server.log")
    }

    /// The superuser's password, one line, as `--password-file` reads it.
    pub fn password_file(&self) -> PathBuf {
        self.directory.path().join("superuser-password")
    }

    pub fn superuser_password(&self) -> &str {
        &self.superuser_password
    }

    /// The provisioner's `--postgres`: the superuser over TCP, password from the file.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    pub fn server_log(&self) -> String {
        std::fs::read(self.log_path())
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_else(|error| format!("(no server log: {error})"))
    }

    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        let mut command = match &self.run_as {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(path);
                command
            }
            None => Command::new(path),
        };
        command.current_dir(self.directory.path());
        command.env("LC_ALL", "C.UTF-8");
        command
    }

    fn initdb(&self) {
        let output = self
            .command("initdb")
            .arg("-D")
            .arg(self.data_directory())
            .args(["-U", "postgres", "-E", "UTF8", "--no-sync"])
            .args(["--auth-local=trust", "--auth-host=scram-sha-256"])
            .arg(format!("--pwfile={}", self.password_file().display()))
            .output()
            .expect("initdb runs");
        check("initdb", &output);
        let socket_directory = self.directory.path().display().to_string();
        let settings = format!(
            "\n# mesh-provision tests\n\
             listen_addresses = '127.0.0.1'\n\
             unix_socket_directories = '{socket_directory}'\n\
             password_encryption = 'scram-sha-256'\n\
             log_statement = 'all'\n\
             log_connections = on\n\
             log_disconnections = on\n\
             logging_collector = off\n\
             fsync = off\n\
             synchronous_commit = off\n\
             full_page_writes = off\n\
             shared_buffers = 16MB\n\
             max_connections = 50\n"
        );
        append(&self.data_directory().join("postgresql.conf"), &settings);
        // first match wins: the harness over the socket, everybody else with SCRAM
        std::fs::write(
            self.data_directory().join("pg_hba.conf"),
            "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n",
        )
        .expect("pg_hba.conf");
    }

    fn try_start(&self) -> Result<(), String> {
        let output = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data_directory())
            .arg("-l")
            .arg(self.log_path())
            .args(["-w", "-t", &START_TIMEOUT_SECONDS.to_string()])
            .args(["-o", &format!("-c port={}", self.port)])
            .arg("start")
            .output()
            .expect("pg_ctl runs");
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "pg_ctl start on port {}: {}{}",
                self.port,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }

    fn wait_until_it_answers(&self) {
        // pg_ctl -w waited for the socket; one query shows TCP and SCRAM work too
        let answer = self.psql("SELECT 'ready'");
        assert_eq!(answer, "ready", "the new cluster answers");
    }

    /// Stops the server (fast), keeping the data; `restart` starts it on the same port.
    pub fn stop(&mut self) {
        let output = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data_directory())
            .args(["-m", "fast", "-w", "-t", &START_TIMEOUT_SECONDS.to_string()])
            .arg("stop")
            .output()
            .expect("pg_ctl runs");
        check("pg_ctl stop", &output);
        self.running = false;
    }

    pub fn restart(&mut self) {
        if let Err(reason) = self.try_start() {
            panic!("{reason}\n--- server log ---\n{}", self.server_log());
        }
        self.running = true;
        self.wait_until_it_answers();
    }

    /// Runs SQL as the superuser in `postgres`; panics with psql's error if it fails.
    pub fn psql(&self, sql: &str) -> String {
        self.psql_in("postgres", sql)
    }

    /// Runs SQL as the superuser in `database`, over TCP with the superuser's password.
    pub fn psql_in(&self, database: &str, sql: &str) -> String {
        self.psql_as("postgres", &self.superuser_password, database, sql)
            .unwrap_or_else(|error| panic!("psql failed for {sql:?}: {error}"))
    }

    /// Runs SQL as `user` with `password` over TCP, as a consumer would connect: the
    /// output (unaligned, tuples only, trimmed) or psql's error.
    pub fn psql_as(
        &self,
        user: &str,
        password: &str,
        database: &str,
        sql: &str,
    ) -> Result<String, String> {
        let output = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", user, "-d", database, "-c", sql])
            .env("PGPASSWORD", password)
            .env("PGCONNECT_TIMEOUT", CONNECT_TIMEOUT_SECONDS.to_string())
            .env("PGSSLMODE", "disable")
            .env_remove("PGPASSFILE")
            .output()
            .expect("psql runs");
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).trim().to_string())
        }
    }

    /// Every file of the cluster (data, WAL, log) that contains `needle`.
    pub fn files_containing(&self, needle: &[u8]) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let mut work = vec![self.directory.path().to_path_buf()];
        while let Some(directory) = work.pop() {
            let Ok(entries) = std::fs::read_dir(&directory) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    work.push(path);
                } else if kind.is_file()
                    && let Ok(bytes) = std::fs::read(&path)
                    && bytes.windows(needle.len()).any(|window| window == needle)
                {
                    found.push(path);
                }
            }
        }
        found
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.running {
            // immediate: nothing here needs to survive, and the test is done waiting
            let stopped = self
                .command("pg_ctl")
                .arg("-D")
                .arg(self.data_directory())
                .args(["-m", "immediate", "-w", "-t", "60"])
                .arg("stop")
                .output();
            if let Ok(output) = stopped
                && !output.status.success()
            {
                eprintln!(
                    "warning: pg_ctl stop: {}",
                    String::from_utf8_lossy(&output.stderr)
                );
            }
        }
    }
}

fn check(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap_or_else(|error| panic!("cannot open {path:?}: {error}"));
    file.write_all(text.as_bytes()).expect("append");
}

/// The directory of `initdb`, `pg_ctl` and `psql`: the newest PostgreSQL installed.
fn postgres_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("MESH_TEST_POSTGRES_BIN") {
        return PathBuf::from(bin);
    }
    let versions = std::fs::read_dir("/usr/lib/postgresql").unwrap_or_else(|error| {
        panic!(
            "no PostgreSQL server binaries: /usr/lib/postgresql: {error} \
             (install `postgresql`, or set MESH_TEST_POSTGRES_BIN)"
        )
    });
    let mut found: Vec<(u32, PathBuf)> = versions
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, bin)| bin)
        .expect("no /usr/lib/postgresql/VERSION/bin/initdb (install `postgresql`)")
}

fn current_uid() -> u32 {
    let output = Command::new("id").arg("-u").output().expect("id runs");
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .expect("id -u prints a number")
}

fn user_ids(user: &str) -> (u32, u32) {
    let id = |flag: &str| -> u32 {
        let output = Command::new("id")
            .args([flag, user])
            .output()
            .expect("id runs");
        assert!(
            output.status.success(),
            "no `{user}` user to run PostgreSQL as: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .expect("id prints a number")
    };
    (id("-u"), id("-g"))
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_nanos()
}
