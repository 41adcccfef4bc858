//! `meshc eval` prints byte for byte what `nix-instantiate --eval --strict [--json]`
//! prints: the value and a newline, or JSON with no newline. Compared with the real
//! nix-instantiate, which these tests require (install nix-bin).

use std::process::Command;

fn run(program: &str, arguments: &[&str]) -> Vec<u8> {
    let output = Command::new(program)
        .args(arguments)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "{program} cannot run ({e}); the oracle tests need nix-bin: apt-get install nix-bin"
            )
        });
    assert!(
        output.status.success(),
        "{program} {arguments:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

#[test]
fn eval_output_is_byte_identical_to_nix_instantiate() {
    let meshc = env!("CARGO_BIN_EXE_meshc");
    for expression in ["{ a = 1; b = [ \"x\" 2.5 null ]; }", "\"s\\n\"", "[ ]"] {
        for json in [false, true] {
            let mut mesh = vec!["eval", "--expr", expression];
            let mut nix = vec!["--eval", "--strict", "--expr", expression];
            if json {
                mesh.insert(1, "--json");
                nix.insert(2, "--json");
            }
            assert_eq!(
                run(meshc, &mesh),
                run("nix-instantiate", &nix),
                "{expression} (json: {json})"
            );
        }
    }
}
