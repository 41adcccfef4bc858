//! `scripts/release`, the profile-guided build of meshc: its training set is the
//! language corpus, the examples, scripts/pgo-training and a light generated fleet;
//! every input it names exists, no file under bench/ is among them and the generated
//! fleet is not the heavy one (those are what the build is measured on). That the training
//! programs evaluate as Nix does is meshc/tests/eval.rs'.
//! The build itself takes two release builds and is run by hand (bench/*/RESULTS.md).

use std::process::Command;

use tests::workspace_root as workspace;

#[test]
fn the_training_set_is_the_corpus_the_examples_and_a_light_fleet() {
    let output = Command::new("bash")
        .arg("scripts/release")
        .arg("--list")
        .current_dir(workspace())
        .output()
        .expect("scripts/release runs");
    assert!(
        output.status.success(),
        "scripts/release --list failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let listed = String::from_utf8(output.stdout).expect("paths are UTF-8");
    let inputs: Vec<&str> = listed.lines().collect();
    let corpus = inputs
        .iter()
        .filter(|input| input.starts_with("lang/tests/data/") && input.ends_with(".nix"))
        .count();
    assert!(corpus >= 800, "only {corpus} corpus programs are trained");
    assert!(inputs.contains(&"examples/homelab"), "{inputs:?}");
    // the fleet line is the generator's command as the script runs it
    let (generated, named): (Vec<&str>, Vec<&str>) = inputs
        .iter()
        .partition(|input| input.starts_with("python3 bench/fleet/generate.py "));
    assert_eq!(generated.len(), 1, "{inputs:?}");
    assert!(
        !generated[0].contains("--heavy"),
        "the generated fleet is the light one: {generated:?}"
    );
    for input in &named {
        assert!(workspace().join(input).exists(), "{input} does not exist");
        assert!(
            !input.starts_with("bench/"),
            "a benchmark is trained: {input}"
        );
    }
}

#[test]
fn the_profiles_it_builds_with_are_declared() {
    let manifest = std::fs::read_to_string(workspace().join("Cargo.toml")).expect("Cargo.toml");
    let manifest: toml::Table = toml::from_str(&manifest).expect("Cargo.toml is TOML");
    for profile in ["pgo-train", "pgo"] {
        let inherits = manifest
            .get("profile")
            .and_then(|profiles| profiles.get(profile))
            .and_then(|profile| profile.get("inherits"))
            .and_then(toml::Value::as_str);
        assert_eq!(inherits, Some("release"), "profile {profile}");
    }
}
