//! An age private key pasted where a node's public key belongs: refused (E320) by
//! `check`, `build` and `diff`, and no part of it (no 8 characters in a row, in any
//! case) in anything they print, human or JSON: not the message, not the source line
//! drawn beside it, not a suggestion.

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

#[test]
fn a_pasted_private_key_is_refused_and_never_printed() {
    let generated = Command::new("age-keygen")
        .output()
        .expect("age-keygen runs");
    let identity = String::from_utf8(generated.stdout).expect("text");
    let private = identity
        .lines()
        .find(|line| line.starts_with("AGE-SECRET-KEY-1"))
        .expect("the private key line")
        .to_string();
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
