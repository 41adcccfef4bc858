//! An age private key pasted where a node's public key belongs: refused (E320) by
//! `check`, `build` and `diff`, and no part of it (no 8 characters in a row, in any
//! case) in anything they print, human or JSON: not the message, not the source line
//! drawn beside it, not a suggestion. One a module reads from the repository is
//! blotted out of `show`, `options` and the traces of `build`, `eval` and `repl`.

#[path = "support/repository.rs"]
mod support;

use std::process::{Command, Output};

use support::MESHC;

fn assert_absent(key: &str, what: &str, output: &Output) {
    let all =
        String::from_utf8_lossy(&[output.stdout.as_slice(), output.stderr.as_slice()].concat())
            .to_lowercase();
    let key = key.to_lowercase();
    let leaked: Vec<&str> = (0..=key.len() - 8)
        .map(|start| &key[start..start + 8])
        .filter(|piece| all.contains(piece))
        .collect();
    assert!(
        leaked.is_empty(),
        "{what} printed part of the private key ({leaked:?}):\n{all}"
    );
}

/// A new age private key (`AGE-SECRET-KEY-1...`), made by `age-keygen`.
fn new_private_key() -> String {
    let generated = Command::new("age-keygen")
        .output()
        .expect("age-keygen runs");
    let identity = String::from_utf8(generated.stdout).expect("text");
    identity
        .lines()
        .find(|line| line.starts_with("AGE-SECRET-KEY-1"))
        .expect("the private key line")
        .to_string()
}

/// Adds the module `leaky` (in `modules/leaky`) to db1's modules.
fn run_leaky_on_db1(repository: &std::path::Path) {
    let inventory_path = repository.join("mesh.nix");
    let inventory = std::fs::read_to_string(&inventory_path).expect("mesh.nix");
    let changed = inventory.replacen(
        "modules = [ \"postgres\" \"node-exporter\" ];",
        "modules = [ \"postgres\" \"node-exporter\" \"leaky\" ];",
        1,
    );
    assert_ne!(changed, inventory, "db1's modules");
    std::fs::write(&inventory_path, changed).expect("write mesh.nix");
}

#[test]
fn a_pasted_private_key_is_refused_and_never_printed() {
    let private = new_private_key();
    let (temporary, repository) = support::homelab_copy();
    let old = temporary.path().join("old");
    support::assert_built(&support::build(&repository, &old));
    let inventory_path = repository.join("mesh.nix");
    let inventory = std::fs::read_to_string(&inventory_path).expect("mesh.nix");
    let db1 = inventory.find("    db1 = {").expect("db1");
    let start = db1 + inventory[db1..].find("key = \"").expect("key") + "key = \"".len();
    let end = start + inventory[start..].find('"').expect("end of key");
    // with a mistyped key on the next line, so another diagnostic draws the key's line
    let changed = format!("{}{private}{}", &inventory[..start], &inventory[end..]).replacen(
        "address = \"10.0.0.21\";",
        "adress = \"10.0.0.21\";",
        1,
    );
    std::fs::write(&inventory_path, changed).expect("write mesh.nix");

    let repo = repository.as_os_str();
    let new = temporary.path().join("new");
    let runs: Vec<(&str, Vec<&std::ffi::OsStr>)> = vec![
        ("check", vec!["check".as_ref(), "--repo".as_ref(), repo]),
        (
            "check --format json",
            vec![
                "check".as_ref(),
                "--repo".as_ref(),
                repo,
                "--format".as_ref(),
                "json".as_ref(),
            ],
        ),
        (
            "build",
            vec![
                "build".as_ref(),
                "--repo".as_ref(),
                repo,
                "--out".as_ref(),
                new.as_os_str(),
            ],
        ),
        (
            "diff",
            vec![
                "diff".as_ref(),
                "--repo".as_ref(),
                repo,
                "--against".as_ref(),
                old.as_os_str(),
            ],
        ),
        (
            "diff --format json",
            vec![
                "diff".as_ref(),
                "--repo".as_ref(),
                repo,
                "--against".as_ref(),
                old.as_os_str(),
                "--format".as_ref(),
                "json".as_ref(),
            ],
        ),
    ];
    for (what, arguments) in runs {
        let output = Command::new(MESHC)
            .args(&arguments)
            .env("NO_COLOR", "1")
            .output()
            .expect("meshc runs");
        assert_eq!(output.status.code(), Some(1), "{what} did not fail");
        let all =
            String::from_utf8_lossy(&[output.stdout.as_slice(), output.stderr.as_slice()].concat())
                .into_owned();
        assert!(all.contains("E320"), "{what}: no E320:\n{all}");
        assert!(
            all.contains("this is a private key: treat it as leaked and make a new one"),
            "{what}:\n{all}"
        );
        assert!(
            all.contains("unknown key `adress`"),
            "{what}: the other error is missing:\n{all}"
        );
        assert_absent(&private, what, &output);
    }
}

/// A private key that a module reads from the repository (an identity kept there by
/// mistake) and then shows: as a setting's default, in the node's settings, in a
/// trace. No view of it prints any part of the key: `show` and `options` (human and
/// JSON), the traces of `build`, `eval` and `repl`.
#[test]
fn a_private_key_a_module_reads_is_blotted_out_of_every_view() {
    let private = new_private_key();
    let (temporary, repository) = support::homelab_copy();
    std::fs::write(repository.join("stray.key"), format!("{private}\n")).expect("stray.key");
    let module = repository.join("modules/leaky");
    std::fs::create_dir_all(&module).expect("module directory");
    std::fs::write(
        module.join("module.nix"),
        r#"{ mesh, ... }:
{
  description = "Reads what it should not";
  settings.note = mesh.option {
    type = mesh.types.str;
    default = builtins.readFile ../../stray.key;
    description = "A note";
  };
  shapes = { settings, ... }: builtins.trace settings.note [ ];
}
"#,
    )
    .expect("module.nix");
    run_leaky_on_db1(&repository);

    let out = temporary.path().join("out");
    let trace = "builtins.trace (builtins.readFile ./stray.key) 1";
    let runs: Vec<(&str, Vec<&std::ffi::OsStr>)> = vec![
        ("show", vec!["show".as_ref(), "db1".as_ref()]),
        (
            "show --format json",
            vec![
                "show".as_ref(),
                "db1".as_ref(),
                "--format".as_ref(),
                "json".as_ref(),
            ],
        ),
        ("options", vec!["options".as_ref(), "leaky".as_ref()]),
        (
            "options --format json",
            vec![
                "options".as_ref(),
                "leaky".as_ref(),
                "--format".as_ref(),
                "json".as_ref(),
            ],
        ),
        (
            "build",
            vec!["build".as_ref(), "--out".as_ref(), out.as_os_str()],
        ),
        (
            "eval",
            vec!["eval".as_ref(), "--expr".as_ref(), trace.as_ref()],
        ),
    ];
    for (what, arguments) in runs {
        let output = Command::new(MESHC)
            .args(&arguments)
            .current_dir(&repository)
            .env("NO_COLOR", "1")
            .output()
            .expect("meshc runs");
        let all =
            String::from_utf8_lossy(&[output.stdout.as_slice(), output.stderr.as_slice()].concat())
                .into_owned();
        assert!(output.status.success(), "{what} failed:\n{all}");
        // what it shows is there, blotted out
        assert!(all.contains("****************"), "{what}:\n{all}");
        assert_absent(&private, what, &output);
    }

    let mut repl = Command::new(MESHC)
        .arg("repl")
        .current_dir(&repository)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("meshc repl runs");
    {
        use std::io::Write;
        let mut input = repl.stdin.take().expect("a pipe");
        input
            .write_all(format!("{trace}\n").as_bytes())
            .expect("meshc repl reads");
    }
    let output = repl.wait_with_output().expect("meshc repl ends");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "1\n");
    assert!(
        String::from_utf8_lossy(&output.stderr).starts_with("trace: ****"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_absent(&private, "repl", &output);
}

/// A private key a module puts into a shape (read from the repository, as text or
/// as a file's `source`, or written out) is refused (E400) at the field, and no
/// plan is written: a plan is not secret (it is written to the output, sent through
/// the broker and kept on the node), and `meshc diff` shows a file's content only as
/// changed. They were built, the key in the plan as it was read.
#[test]
fn a_private_key_a_module_puts_into_a_plan_is_refused() {
    let private = new_private_key();
    let (temporary, repository) = support::homelab_copy();
    std::fs::write(repository.join("stray.key"), format!("{private}\n")).expect("stray.key");
    let module = repository.join("modules/leaky");
    std::fs::create_dir_all(&module).expect("module directory");
    run_leaky_on_db1(&repository);
    let lowercase = private.to_lowercase();
    let shapes = [
        (
            "content",
            "mesh.file { path = \"/etc/leak\"; content = builtins.readFile ../../stray.key; }"
                .to_string(),
        ),
        (
            "content",
            "mesh.file { path = \"/etc/leak\"; source = ../../stray.key; }".to_string(),
        ),
        (
            "exec",
            format!(
                "mesh.service {{ name = \"leak\"; exec = [ \"/bin/true\" \"{lowercase}\" ]; }}"
            ),
        ),
    ];
    for (index, (field, shape)) in shapes.iter().enumerate() {
        std::fs::write(
            module.join("module.nix"),
            format!(
                "{{ mesh, ... }}:\n{{\n  description = \"Leaks\";\n  shapes = {{ ... }}: [\n    ({shape})\n  ];\n}}\n"
            ),
        )
        .expect("module.nix");
        let out = temporary.path().join(format!("out{index}"));
        let output = support::build(&repository, &out);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{shape}: {stderr}");
        assert!(stderr.contains("E400"), "{shape}: {stderr}");
        assert!(
            stderr.contains(&format!("a private key into the plan, in its `{field}`")),
            "{shape}: {stderr}"
        );
        assert_absent(&private, shape, &output);
        assert!(!out.join("nodes").exists(), "{shape}: a plan was written");
    }
}

/// An SSH private key pasted where a node's age key belongs (an agenix user's
/// likely mistake: the host key instead of its `.pub`) is E104, and no part of it is
/// printed, human or JSON: it was printed whole, in the message and beside it.
#[test]
fn a_pasted_ssh_private_key_is_never_printed() {
    let (temporary, repository) = support::homelab_copy();
    let key_path = temporary.path().join("host_key");
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&key_path)
        .status()
        .expect("ssh-keygen runs");
    assert!(made.success());
    let key = std::fs::read_to_string(&key_path).expect("the key");
    let inventory_path = repository.join("mesh.nix");
    let inventory = std::fs::read_to_string(&inventory_path).expect("mesh.nix");
    let db1 = inventory.find("    db1 = {").expect("db1");
    let start = db1 + inventory[db1..].find("key = \"").expect("key") + "key = \"".len();
    let end = start + inventory[start..].find('"').expect("end of key");
    let changed = format!("{}{}{}", &inventory[..start], key.trim(), &inventory[end..]);
    std::fs::write(&inventory_path, changed).expect("write mesh.nix");
    // the key's base64 body, without its armour lines
    let body: String = key
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    for format in [&[][..], &["--format", "json"][..]] {
        let output = Command::new(MESHC)
            .arg("check")
            .arg("--repo")
            .arg(&repository)
            .args(format)
            .output()
            .expect("meshc runs");
        assert_eq!(output.status.code(), Some(1), "{format:?}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("E104")
                || String::from_utf8_lossy(&output.stdout).contains("E104"),
            "{format:?}"
        );
        assert_absent(&body, "check", &output);
    }
}
