//! The build cache (`OUT/.mesh-cache`) against builds from nothing: after every
//! edit of a seeded random sequence (inventory entries, a provider's address, node
//! keys, module files, files they import, files the inventory imports, lock entries,
//! secrets made for a new consumer, files nothing reads), an incremental build and a
//! `--no-cache` build into a new directory write the same bytes, file for file. The
//! targeted cases count what was compiled again; a damaged, foreign or tampered
//! cache is noted (E122, E123, E124) and never trusted.

#[path = "support/repository.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use support::{assert_built, build_with, files_under, homelab_copy};

/// A small deterministic generator (xorshift64*): the sequence is the same on every
/// run; `MESH_CACHE_SEED` picks another.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// Replaces the one occurrence of `from` in `path` (panics if there is none).
fn replace(path: &Path, from: &str, to: &str) {
    let text = read(path);
    assert!(text.contains(from), "`{from}` is not in {}", path.display());
    write(path, &text.replacen(from, to, 1));
}

/// The example, with a file the inventory imports and a file a module imports, so
/// that edits can reach both.
fn repository() -> (tempfile::TempDir, std::path::PathBuf) {
    let (temporary, repository) = homelab_copy();
    std::fs::create_dir_all(repository.join("lib")).expect("lib/");
    write(&repository.join("lib/shell.nix"), "null\n");
    replace(
        &repository.join("mesh.nix"),
        "shell = null;",
        "shell = import ./lib/shell.nix;",
    );
    write(&repository.join("modules/web/title.nix"), "\"mesh\"\n");
    replace(
        &repository.join("modules/web/module.nix"),
        "default = \"mesh\";",
        "default = import ./title.nix;",
    );
    // read only while shop's shapes are evaluated (a node that is reused does not
    // read it again, and it must stay recorded)
    write(
        &repository.join("modules/shop/sslmode.nix"),
        "\"require\"\n",
    );
    replace(
        &repository.join("modules/shop/module.nix"),
        "sslmode=${db.facts.sslmode}",
        "sslmode=${import ./sslmode.nix}",
    );
    (temporary, repository)
}

/// [`repository`] with an inventory written as plain data: no `let`, the admins'
/// accounts written out in the two entries that use them (the cache digests such
/// an inventory's entries from their text, without evaluating it).
fn plain_repository() -> (tempfile::TempDir, std::path::PathBuf) {
    let (temporary, repository) = repository();
    let inventory = repository.join("mesh.nix");
    let text = read(&inventory);
    let start = text.find("let\n").expect("the inventory's let");
    let end = text.find("in\n{").expect("its body");
    let admins = text[start..end]
        .trim_start_matches("let\n")
        .trim()
        .trim_start_matches("admins =")
        .trim()
        .trim_end_matches(';')
        .replace("import ./lib/shell.nix", "null");
    let body = text[end + 3..].replace(
        "settings.users.accounts = admins;",
        &format!("settings.users.accounts = {admins};"),
    );
    write(&inventory, &format!("{}{body}", &text[..start]));
    assert!(
        !read(&inventory).contains("admins;"),
        "{}",
        read(&inventory)
    );
    (temporary, repository)
}

/// The output's files but the cache, by relative path.
fn output_files(out: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = files_under(out);
    files.remove(".mesh-cache");
    files
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `(reused, of)` from the build's summary: "(R of N reused".
fn reused(output: &Output) -> (usize, usize) {
    let text = stderr(output);
    let start = text
        .find(" reused")
        .and_then(|end| text[..end].rfind('(').map(|start| (start, end)))
        .unwrap_or_else(|| panic!("no reuse count in:\n{text}"));
    let words: Vec<&str> = text[start.0 + 1..start.1].split(' ').collect();
    match words.as_slice() {
        [reused, "of", of] => (
            reused.parse().expect("a count"),
            of.parse().expect("a count"),
        ),
        _ => panic!("no reuse count in:\n{text}"),
    }
}

/// The nodes `--timings` lists after `prefix`.
fn listed(output: &Output, prefix: &str) -> Vec<String> {
    let text = stderr(output);
    let line = text
        .lines()
        .find_map(|line| line.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` in:\n{text}"));
    if line == "none" {
        return Vec::new();
    }
    line.split(", ").map(str::to_string).collect()
}

/// The nodes the build compiled again (`--timings` names them).
fn compiled(output: &Output) -> Vec<String> {
    listed(output, "cache: compiled again: ")
}

/// The nodes whose first half (resolution to declarations) the build evaluated;
/// the others took their declarations from the cache.
fn evaluated(output: &Output) -> Vec<String> {
    listed(output, "cache: evaluated: ")
}

/// What a build said but for its timings and cache lines, and the output's path.
fn said(output: &Output, out: &Path) -> String {
    stderr(output)
        .lines()
        .filter(|line| !line.starts_with("cache: ") && !line.starts_with("timings: "))
        .map(|line| line.replace(&out.display().to_string(), "OUT"))
        .map(|line| match line.find(" in ") {
            Some(at) if line.starts_with("built ") => line[..at].to_string(),
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Builds the repository from nothing into `fresh` and asserts that `out` holds
/// the same files (the cache's file aside).
fn assert_as_from_nothing(repository: &Path, out: &Path, fresh: &Path) {
    assert_built(&build_with(repository, fresh, &["--no-cache"]));
    assert_eq!(output_files(out), output_files(fresh));
}

/// Builds into `out` (with `--timings`) and from nothing into `fresh`; both must
/// end the same way and say the same. Returns both builds.
fn beside_a_build_from_nothing(
    repository: &Path,
    out: &Path,
    fresh: &Path,
    context: &str,
) -> (Output, Output) {
    let built = build_with(repository, out, &["--timings"]);
    let from_nothing = build_with(repository, fresh, &["--no-cache"]);
    assert_eq!(
        built.status.code(),
        from_nothing.status.code(),
        "{context}: {}",
        stderr(&built)
    );
    assert_eq!(
        said(&built, out),
        said(&from_nothing, fresh),
        "{context}: {}",
        stderr(&built)
    );
    (built, from_nothing)
}

const EDITS: usize = 12;

/// Edits that break the repository: (file, text in it, what it becomes, what it is).
const BREAKING: [(&str, &str, &str, &str); 4] = [
    (
        "modules/web/module.nix",
        "type = mesh.types.port; default = ",
        "type = mesh.types.port; default = \"eighty\"; x = ",
        "web's default port is a string (E204, said loading the module)",
    ),
    (
        "modules/web/module.nix",
        "(mesh.user { name = \"web\";",
        "(mesh.user { name = throw \"no web user\";",
        "web's shapes throw (said by the nodes that run it)",
    ),
    (
        "mesh.nix",
        "settings.shop.database = \"db1\";",
        "settings.shop.database = \"db9\";",
        "shop's database is a node that does not exist (said by the link)",
    ),
    (
        "modules/shop/module.nix",
        "shapes = { settings, logins, ... }:",
        "shapes = { settings, logins, ... }: {",
        "shop's module is not Nix (a syntax error)",
    ),
];

/// Breaks the repository with one of [`BREAKING`], builds into `incremental` and
/// from nothing, checks that both say the same and end the same way, and mends it.
fn broken_build(repository: &Path, incremental: &Path, fresh: &Path, which: usize, context: &str) {
    let (file, from, to, what) = BREAKING[which % BREAKING.len()];
    let path = repository.join(file);
    let original = read(&path);
    if !original.contains(from) {
        return;
    }
    write(&path, &original.replacen(from, to, 1));
    let context = format!("{context}, then {what}");
    let (_, from_nothing) = beside_a_build_from_nothing(repository, incremental, fresh, &context);
    assert!(
        !from_nothing.status.success(),
        "{what}: {}",
        stderr(&from_nothing)
    );
    write(&path, &original);
}

/// Applies edit number `kind` with random values; returns what it did.
fn edit(repository: &Path, kind: usize, random: &mut Random, step: usize) -> String {
    let inventory = repository.join("mesh.nix");
    match kind {
        0 => {
            let text = read(&inventory);
            let start = text.find("title = \"app2").expect("app2's title") + 9;
            let end = start + text[start..].find('"').expect("a closing quote");
            let title = format!("app2-{}", random.below(1000));
            write(
                &inventory,
                &format!("{}{title}{}", &text[..start], &text[end..]),
            );
            format!("app2's title is {title}")
        }
        1 => {
            let text = read(&inventory);
            let entry = text.find("db1 = {").expect("db1's entry");
            let start = entry + text[entry..].find("address = \"").expect("its address") + 11;
            let end = start + text[start..].find('"').expect("a closing quote");
            let address = format!("10.0.1.{}", 20 + random.below(30));
            write(
                &inventory,
                &format!("{}{address}{}", &text[..start], &text[end..]),
            );
            format!("db1's address is {address}")
        }
        2 => {
            let keys = [
                "age12y52ld3kt27sk7w3rpt4d6n0mpndj2v2u02z7q8ra8sjr0saepcshezt9w",
                "age12xjejjsy5p5xj3y3hls5u4msyegj2jwdgyjaa4w6v6ylzu4lpdnsv7mdzg",
            ];
            let text = read(&inventory);
            let (from, to) = if text.contains(keys[0]) {
                (keys[0], keys[1])
            } else {
                (keys[1], keys[0])
            };
            // the gateway's key, which no secret is sealed to
            let gateway = text.find("gateway = {").expect("the gateway");
            let at = gateway + text[gateway..].find("key = ").expect("its key");
            let line_end = at + text[at..].find(';').expect("a semicolon");
            let line = text[at..line_end].replacen(from, to, 1);
            write(
                &inventory,
                &format!("{}{line}{}", &text[..at], &text[line_end..]),
            );
            "the gateway's key changed".to_string()
        }
        3 => {
            let module = repository.join("modules/web/module.nix");
            let text = read(&module);
            let start = text
                .find("type = mesh.types.port; default = ")
                .expect("the port")
                + 34;
            let end = start + text[start..].find(';').expect("a semicolon");
            let port = 8000 + random.below(900);
            write(
                &module,
                &format!("{}{port}{}", &text[..start], &text[end..]),
            );
            format!("web's default port is {port}")
        }
        4 => {
            let title = format!("site-{}", random.below(1000));
            write(
                &repository.join("modules/web/title.nix"),
                &format!("\"{title}\"\n"),
            );
            format!("web's imported title is {title}")
        }
        5 => {
            let shells = ["null", "\"/bin/bash\"", "\"/bin/sh\""];
            let shell = shells[random.below(3) as usize];
            write(&repository.join("lib/shell.nix"), &format!("{shell}\n"));
            format!("the inventory's imported shell is {shell}")
        }
        6 => {
            let lock = repository.join("mesh.lock");
            let text = read(&lock);
            let at = text.find("postgres:16\": \"sha256:").expect("the pin") + 22;
            let digit = char::from_digit(random.below(16) as u32, 16).expect("a hex digit");
            let mut text = text.into_bytes();
            text[at] = digit as u8;
            write(&lock, &String::from_utf8(text).expect("text"));
            format!("postgres's pinned digest starts with {digit}")
        }
        7 => {
            // a new consumer of db1's postgres: grants are made in secrets/
            let text = read(&inventory);
            if text.contains("modules = [ \"proxy\" \"monitoring\" \"node-exporter\" \"users\" ];")
            {
                replace(
                    &inventory,
                    "modules = [ \"proxy\" \"monitoring\" \"node-exporter\" \"users\" ];",
                    "modules = [ \"proxy\" \"monitoring\" \"node-exporter\" \"users\" \"shop\" ];",
                );
                "the gateway runs shop (a new grant)".to_string()
            } else {
                replace(
                    &inventory,
                    "modules = [ \"proxy\" \"monitoring\" \"node-exporter\" \"users\" \"shop\" ];",
                    "modules = [ \"proxy\" \"monitoring\" \"node-exporter\" \"users\" ];",
                );
                "the gateway no longer runs shop".to_string()
            }
        }
        9 => {
            // the app1 entry's shell between plain data and an import (which makes
            // an inventory of plain data one to evaluate)
            let text = read(&inventory);
            let entry = text.find("app1 = {").expect("app1's entry");
            let next = entry + text[entry..].find("app2 = {").expect("app2's entry");
            let (from, to) = if text[entry..next].contains("shell = null;") {
                ("shell = null;", "shell = import ./lib/shell.nix;")
            } else if text[entry..next].contains("shell = import ./lib/shell.nix;") {
                ("shell = import ./lib/shell.nix;", "shell = null;")
            } else {
                return "app1's entry has no shell of its own".to_string();
            };
            let entry_text = text[entry..next].replacen(from, to, 1);
            write(
                &inventory,
                &format!("{}{entry_text}{}", &text[..entry], &text[next..]),
            );
            format!("app1's shell is `{to}`")
        }
        8 => {
            let modes = ["require", "verify-full", "prefer"];
            let mode = modes[random.below(3) as usize];
            write(
                &repository.join("modules/shop/sslmode.nix"),
                &format!("\"{mode}\"\n"),
            );
            format!("shop's lazily imported sslmode is {mode}")
        }
        10 => {
            // read by the mixed inventory's app1 entry (nothing reads it in the others)
            let title = format!("one-{}", random.below(1000));
            write(&repository.join("lib/app1-title.txt"), &title);
            format!("app1's title file says {title}")
        }
        _ => {
            write(&repository.join("NOTES.txt"), &format!("note {step}\n"));
            write(
                &repository.join("modules/web/README"),
                &format!("readme {step}\n"),
            );
            "files nothing reads changed".to_string()
        }
    }
}

#[test]
fn incremental_builds_write_the_bytes_of_builds_from_nothing_after_random_edits() {
    random_edits(repository(), REACHED);
}

/// How an inventory whose entries and `let`s reach only what can be followed is
/// digested: by text, unevaluated.
const REACHED: &str = "from the text each entry reaches";

/// [`repository`] with an inventory that cannot be followed: the cache evaluates
/// every entry to digest it.
fn evaluated_repository() -> (tempfile::TempDir, std::path::PathBuf) {
    let (temporary, repository) = repository();
    let inventory = repository.join("mesh.nix");
    let text = read(&inventory);
    write(&inventory, &format!("with {{ }};\n{text}"));
    (temporary, repository)
}

/// [`repository`] where one entry (app1's) reads a file: it alone is evaluated to
/// digest it, the others are digested by what they reach.
fn mixed_repository() -> (tempfile::TempDir, std::path::PathBuf) {
    let (temporary, repository) = repository();
    write(&repository.join("lib/app1-title.txt"), "app1");
    replace(
        &repository.join("mesh.nix"),
        "settings.web.title = \"app1\";",
        "settings.web.title = builtins.readFile ./lib/app1-title.txt;",
    );
    (temporary, repository)
}

#[test]
fn incremental_builds_of_an_inventory_that_is_evaluated_write_the_bytes_of_builds_from_nothing() {
    random_edits(evaluated_repository(), "evaluated");
}

#[test]
fn incremental_builds_of_an_inventory_partly_evaluated_write_the_bytes_of_builds_from_nothing() {
    random_edits(
        mixed_repository(),
        &format!("{REACHED}, 1 of 5 entries evaluated"),
    );
}

#[test]
fn incremental_builds_of_an_inventory_of_plain_data_write_the_bytes_of_builds_from_nothing() {
    random_edits(plain_repository(), "from its text (plain data)");
}

/// Seeded random edits, each followed by an incremental build and one from nothing,
/// whose files must be the same bytes; some incremental build digested the
/// inventory as `digest` says.
fn random_edits((temporary, repository): (tempfile::TempDir, std::path::PathBuf), digest: &str) {
    let seed = std::env::var("MESH_CACHE_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or(0x6d65_7368_u64);
    let mut random = Random(seed | 1);
    let incremental = temporary.path().join("incremental");
    assert_built(&build_with(&repository, &incremental, &[]));
    let mut reused_any = false;
    let mut digested_so = false;
    for step in 0..30 {
        let kind = random.below(EDITS as u64) as usize;
        let what = edit(&repository, kind, &mut random, step);
        let built = build_with(&repository, &incremental, &["--timings"]);
        assert_built(&built);
        reused_any |= reused(&built).0 > 0;
        digested_so |= stderr(&built).contains(&format!("cache: inventory digested: {digest}"));
        let fresh = temporary.path().join(format!("fresh-{step}"));
        assert_built(&build_with(&repository, &fresh, &["--no-cache"]));
        assert!(
            !fresh.join(".mesh-cache").exists(),
            "--no-cache keeps no cache"
        );
        let (got, want) = (output_files(&incremental), output_files(&fresh));
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "step {step} ({what}, seed {seed}): the same files"
        );
        for (name, bytes) in &want {
            assert!(
                got.get(name) == Some(bytes),
                "step {step} ({what}, seed {seed}): `{name}` differs from the build from nothing"
            );
        }
        // now and then a broken build: it says what a build from nothing says,
        // and leaves the output and its cache as they were for the next step
        if random.below(3) == 0 {
            let which = random.below(BREAKING.len() as u64) as usize;
            let fresh = temporary.path().join(format!("broken-{step}"));
            let context = format!("step {step} ({what}, seed {seed})");
            broken_build(&repository, &incremental, &fresh, which, &context);
        }
    }
    assert!(reused_any, "some build reused a node");
    assert!(digested_so, "some build digested the inventory: {digest}");
}

#[test]
fn a_file_an_unread_entry_and_a_module_both_read_stays_charged_to_both() {
    let (temporary, repository) = repository();
    let inventory = repository.join("mesh.nix");
    let out = temporary.path().join("out");
    // web's title.nix, read when web is loaded, is also db1's address
    write(&repository.join("modules/web/title.nix"), "\"10.0.0.21\"\n");
    replace(
        &inventory,
        "address = \"10.0.0.21\";",
        "address = import ./modules/web/title.nix;",
    );
    assert_built(&build_with(&repository, &out, &[]));
    // another node's edit: its worker loads web and reads title.nix, while db1's
    // entry (declarations from the cache) is not read
    replace(&inventory, "title = \"app2\"", "title = \"two\"");
    let built = build_with(&repository, &out, &["--timings"]);
    assert_built(&built);
    assert!(
        !evaluated(&built).contains(&"db1".to_string()),
        "{}",
        stderr(&built)
    );
    // db1 moves: its consumers must see it, as a build from nothing does
    write(&repository.join("modules/web/title.nix"), "\"10.0.0.22\"\n");
    assert_built(&build_with(&repository, &out, &[]));
    let fresh = temporary.path().join("fresh");
    assert_as_from_nothing(&repository, &out, &fresh);
}

/// The cache is judged on the file opened, not on its path: the file the caller
/// accepts is used; one it refuses (a default output's cache that is not the one
/// the record of the user's last build names) is not read, and is said (E123); a
/// copy of the accepted one put in its place is another file, refused as well.
#[test]
fn a_cache_is_judged_by_the_file_opened_not_by_its_path() {
    let (_temporary, repository, out) = built_once();
    let cache = out.join(compiler::cache::CACHE_FILE);
    let stamp_of = |path: &Path| {
        compiler::Stamp::of_metadata(&std::fs::symlink_metadata(path).expect("the cache"))
            .expect("a regular file")
    };
    let recorded = stamp_of(&cache);
    let accept = |stamp: &compiler::Stamp| *stamp == recorded;
    let unchanged =
        |start: &compiler::cache::Start| matches!(start, compiler::cache::Start::Unchanged { .. });
    let (start, notes) = compiler::cache::open(&repository, &out, &accept);
    assert!(notes.is_empty(), "{notes:?}");
    assert!(unchanged(&start), "the accepted cache says nothing changed");
    let refused = |notes: &[lang::Diagnostic]| {
        notes.len() == 1
            && notes[0].code == lang::codes::CACHE_FOREIGN
            && notes[0].message.contains("not the one your last build")
    };
    let (start, notes) = compiler::cache::open(&repository, &out, &|_| false);
    assert!(refused(&notes), "{notes:?}");
    assert!(!unchanged(&start), "a refused cache is not read");
    // the same bytes in another file put in its place
    let copy = out.join("copy");
    let bytes = std::fs::read(&cache).expect("the cache");
    std::fs::write(&copy, &bytes).expect("copied");
    std::fs::rename(&copy, &cache).expect("put in its place");
    assert_eq!(std::fs::read(&cache).expect("the copy"), bytes);
    let (start, notes) = compiler::cache::open(&repository, &out, &accept);
    assert!(refused(&notes), "{notes:?}");
    assert!(!unchanged(&start));
}

#[test]
fn a_changed_file_no_node_reads_rebuilds_nothing() {
    let (_temporary, repository, out) = built_once();
    write(&repository.join("NOTES.txt"), "not read by anything\n");
    write(&repository.join("modules/web/README"), "nor this\n");
    let built = build_with(&repository, &out, &[]);
    assert_built(&built);
    assert_eq!(reused(&built), (5, 5), "{}", stderr(&built));
    // a file a module imports is read: its nodes are compiled again
    write(&repository.join("modules/web/title.nix"), "\"changed\"\n");
    let built = build_with(&repository, &out, &["--timings"]);
    assert_built(&built);
    assert_eq!(compiled(&built), ["app1", "app2"], "{}", stderr(&built));
}

#[test]
fn a_changed_provider_address_rebuilds_exactly_its_consumers_and_itself() {
    let (_temporary, repository, out) = built_once();
    let built = rebuilt_after_editing(&repository, &out, ("\"10.0.0.21\"", "\"10.0.0.41\""));
    // db1 provides postgres, which app1 and app2 consume through shop, and
    // node-exporter's metrics, which the gateway's monitoring consumes; mq1 reads
    // nothing of db1
    assert_eq!(
        compiled(&built),
        ["app1", "app2", "db1", "gateway"],
        "{}",
        stderr(&built)
    );
    assert_eq!(reused(&built), (1, 5));
    // one node's entry: that node only
    let built = rebuilt_after_editing(&repository, &out, ("title = \"app2\"", "title = \"two\""));
    assert_eq!(compiled(&built), ["app2"], "{}", stderr(&built));
}

/// What `--timings` says of how the inventory's entries were digested.
fn digested(output: &Output) -> String {
    let text = stderr(output);
    text.lines()
        .find_map(|line| line.strip_prefix("cache: inventory digested: "))
        .unwrap_or_else(|| panic!("no digest line in:\n{text}"))
        .to_string()
}

#[test]
fn an_inventory_of_plain_data_is_digested_from_its_text() {
    let (temporary, repository) = plain_repository();
    let inventory = repository.join("mesh.nix");
    let out = temporary.path().join("out");
    let all = ["app1", "app2", "db1", "gateway", "mq1"];
    assert_built(&build_with(&repository, &out, &[]));
    replace(&inventory, "title = \"app2\"", "title = \"two\"");
    let built = build_with(&repository, &out, &["--timings"]);
    assert_built(&built);
    assert_eq!(digested(&built), "from its text (plain data)");
    assert_eq!(evaluated(&built), ["app2"], "{}", stderr(&built));
    // an import in one entry: the inventory is no longer plain data, and every
    // entry's digest is of the other kind (by what it reaches), once
    let text = read(&inventory);
    let app1 = text.find("app1 = {").expect("app1");
    let at = app1 + text[app1..].find("shell = null;").expect("app1's shell");
    write(
        &inventory,
        &format!(
            "{}shell = import ./lib/shell.nix;{}",
            &text[..at],
            &text[at + "shell = null;".len()..]
        ),
    );
    let built = build_with(&repository, &out, &["--timings"]);
    assert_built(&built);
    assert_eq!(digested(&built), REACHED);
    assert_eq!(evaluated(&built), all, "{}", stderr(&built));
    replace(&inventory, "title = \"two\"", "title = \"deux\"");
    let built = build_with(&repository, &out, &["--timings"]);
    assert_eq!(digested(&built), REACHED);
    assert_eq!(evaluated(&built), ["app2"], "{}", stderr(&built));
    // a line added above every entry: every position moves, every node is evaluated
    replace(&inventory, "{\n  registry", "{\n\n  registry");
    let built = build_with(&repository, &out, &["--timings"]);
    assert_eq!(evaluated(&built), all, "{}", stderr(&built));
    let fresh = temporary.path().join("fresh");
    assert_as_from_nothing(&repository, &out, &fresh);
}

/// The example's inventory, a `let` of admins above the entries, is digested
/// by what each entry reaches: an edit to the admins evaluates the two entries
/// that name them, one to a binding no entry names evaluates none.
#[test]
fn a_let_binding_edited_evaluates_exactly_the_entries_that_reach_it() {
    let (temporary, repository) = repository();
    let inventory = repository.join("mesh.nix");
    replace(&inventory, "in\n{", "  unused = 1;\nin\n{");
    let out = temporary.path().join("out");
    assert_built(&build_with(&repository, &out, &[]));
    let built = rebuilt_after_editing(&repository, &out, ("alice@laptop", "alice@desk"));
    assert_eq!(digested(&built), REACHED);
    assert_eq!(evaluated(&built), ["app1", "gateway"], "{}", stderr(&built));
    let built = rebuilt_after_editing(&repository, &out, ("unused = 1;", "unused = 2;"));
    assert_eq!(digested(&built), REACHED);
    assert_eq!(
        evaluated(&built),
        Vec::<String>::new(),
        "{}",
        stderr(&built)
    );
    assert_eq!(reused(&built), (5, 5), "{}", stderr(&built));
    let fresh = temporary.path().join("fresh");
    assert_as_from_nothing(&repository, &out, &fresh);
}

#[test]
fn only_the_nodes_an_edit_reaches_are_evaluated() {
    let (temporary, repository, out) = built_once();
    // one node's entry: that node alone is resolved and evaluated; the others'
    // declarations come from the cache
    let built = rebuilt_after_editing(&repository, &out, ("title = \"app2\"", "title = \"two\""));
    assert_eq!(evaluated(&built), ["app2"], "{}", stderr(&built));
    assert_eq!(compiled(&built), ["app2"], "{}", stderr(&built));
    // a file of a module two nodes run: those two
    write(&repository.join("modules/web/title.nix"), "\"changed\"\n");
    let built = build_with(&repository, &out, &["--timings"]);
    assert_built(&built);
    assert_eq!(evaluated(&built), ["app1", "app2"], "{}", stderr(&built));
    // a provider's address: the provider, and its consumers, whose links change
    // (their declarations came from the cache; they are evaluated after the link)
    let built = rebuilt_after_editing(&repository, &out, ("\"10.0.0.21\"", "\"10.0.0.41\""));
    assert_eq!(
        evaluated(&built),
        ["app1", "app2", "db1", "gateway"],
        "{}",
        stderr(&built)
    );
    let fresh = temporary.path().join("fresh");
    assert_as_from_nothing(&repository, &out, &fresh);
}

#[test]
fn a_build_with_diagnostics_or_traces_says_what_a_build_from_nothing_says() {
    let (temporary, repository, out) = built_once();
    let fresh = temporary.path().join("fresh");
    // a trace in one node's entry, and an error the link raises about another
    // node's consumer: the other nodes' declarations were in the cache, but what
    // the build says is what a build from nothing says, at the same places. An
    // inventory that traces is compared equal in no part: every node is evaluated
    // at once; the link's error is found with cached declarations, and the build
    // made again from nothing
    let every_node = ["app1", "app2", "db1", "gateway", "mq1"];
    let again = ["every node (made again from nothing)"];
    for (from, to, evaluated_nodes) in [
        (
            "title = \"app2\"",
            "title = builtins.trace \"two\" \"app2\"",
            &every_node[..],
        ),
        (
            "settings.shop.database = \"db1\";",
            "settings.shop.database = \"db9\";",
            &again[..],
        ),
    ] {
        replace(&repository.join("mesh.nix"), from, to);
        let (built, _) = beside_a_build_from_nothing(&repository, &out, &fresh, to);
        if built.status.success() {
            assert_eq!(evaluated(&built), evaluated_nodes);
            assert!(!out.join(".mesh-cache").exists(), "no cache is kept");
        }
        // undone: a build from nothing again, which keeps a cache for the next case
        replace(&repository.join("mesh.nix"), to, from);
        assert_built(&build_with(&repository, &out, &[]));
        assert!(out.join(".mesh-cache").exists());
    }
}

#[test]
fn a_damaged_cache_is_e122_and_ignored() {
    let (_temporary, repository, out) = built_once();
    let cache = out.join(".mesh-cache");
    let mut bytes = std::fs::read(&cache).expect("a cache was written");
    // a flipped bit in the record's fleet-wide part, which every build reads: its
    // checksum no longer matches
    let (start, length) = fleet_part(&bytes);
    bytes[start + length / 2] ^= 1;
    std::fs::write(&cache, &bytes).expect("written");
    let built = build_with(&repository, &out, &[]);
    assert_built(&built);
    assert!(stderr(&built).contains("E122"), "{}", stderr(&built));
    assert_eq!(reused(&built), (0, 5));
    // and the next build trusts the cache it wrote
    let built = build_with(&repository, &out, &[]);
    assert_eq!(reused(&built), (5, 5), "{}", stderr(&built));
}

/// A module that lists the build's own output (kept inside the repository): a
/// build whose check of the last record sees the output without `nodes` and whose
/// workers then see the staging directory the build made meanwhile is answered
/// otherwise than its check was. It notes E125, keeps no cache, and the next
/// build compiles every node from nothing (and keeps one again).
#[test]
fn a_file_changed_while_the_build_read_it_is_e125_and_no_cache_is_kept() {
    let (_temporary, repository) = repository();
    let out = repository.join("out");
    std::fs::create_dir_all(repository.join("modules/lister")).expect("modules/lister");
    write(
        &repository.join("modules/lister/module.nix"),
        r#"{ mesh, ... }:
{
  description = "lists the output";
  shapes = { node, ... }: [
    (mesh.file {
      path = "/etc/out-list";
      content = if builtins.pathExists ../../out
        then builtins.concatStringsSep "," (builtins.attrNames (builtins.readDir ../../out))
        else "none";
    })
  ];
}
"#,
    );
    replace(
        &repository.join("mesh.nix"),
        r#"modules = [ "rabbitmq" "node-exporter" ];"#,
        r#"modules = [ "rabbitmq" "node-exporter" "lister" ];"#,
    );
    let built = build_with(&repository, &out, &[]);
    assert_built(&built);
    assert!(!stderr(&built).contains("E125"), "{}", stderr(&built));
    assert!(
        out.join(".mesh-cache").exists(),
        "a first build keeps a cache"
    );
    std::fs::remove_dir_all(out.join("nodes")).expect("nodes removed");
    let built = build_with(&repository, &out, &[]);
    assert_built(&built);
    let said = stderr(&built);
    assert!(said.contains("E125"), "{said}");
    assert!(
        said.contains("`out` changed while the build read it"),
        "{said}"
    );
    assert!(!out.join(".mesh-cache").exists(), "{said}");
    let built = build_with(&repository, &out, &[]);
    assert_built(&built);
    assert!(!stderr(&built).contains("E125"), "{}", stderr(&built));
    assert_eq!(reused(&built), (0, 5), "{}", stderr(&built));
    assert!(out.join(".mesh-cache").exists(), "{}", stderr(&built));
}

/// Where the fleet-wide part of a cache file starts, and its length: the first
/// line is `mesh-cache/FORMAT LENGTH FLEET-DIGEST NODES-DIGEST`.
fn fleet_part(bytes: &[u8]) -> (usize, usize) {
    let end = bytes
        .iter()
        .position(|byte| *byte == b'\n')
        .expect("a first line");
    let line = std::str::from_utf8(&bytes[..end]).expect("a text first line");
    let length = line.split(' ').nth(1).expect("a length");
    (end + 1, length.parse().expect("a length"))
}

/// The nodes of the record are read only when a build is not a no-op: a nodes part
/// that is no record, under a checksum that matches it, or one whose checksum
/// does not match, is noted then and the build is one from nothing; a no-op build
/// never reads it.
#[test]
fn a_record_whose_nodes_are_not_a_record_is_e122_when_they_are_read() {
    for damage in ["not a record", "a flipped bit"] {
        a_damaged_nodes_part_is_e122_when_it_is_read(damage);
    }
}

fn a_damaged_nodes_part_is_e122_when_it_is_read(damage: &str) {
    let (_temporary, repository, out) = built_once();
    let cache = out.join(".mesh-cache");
    let bytes = std::fs::read(&cache).expect("a cache");
    let (start, length) = fleet_part(&bytes);
    let line = std::str::from_utf8(&bytes[..start - 1]).expect("a text first line");
    let words: Vec<&str> = line.split(' ').collect();
    let fleet = &bytes[start..start + length];
    let mut nodes = bytes[start + length..].to_vec();
    let digest = if damage == "not a record" {
        nodes = b"{\"node\": [".to_vec();
        format!("xxh64:{:016x}", xxhash_rust::xxh64::xxh64(&nodes, 0))
    } else {
        let at = nodes.len() / 2;
        nodes[at] ^= 1;
        words[3].to_string()
    };
    let mut rewritten = format!("{} {} {} {digest}\n", words[0], words[1], words[2]).into_bytes();
    rewritten.extend_from_slice(fleet);
    rewritten.extend_from_slice(&nodes);
    std::fs::write(&cache, rewritten).expect("written");
    let built = build_with(&repository, &out, &[]);
    assert_eq!(
        reused(&built),
        (5, 5),
        "a no-op reads no node: {}",
        stderr(&built)
    );
    assert!(!stderr(&built).contains("E122"), "{}", stderr(&built));
    replace(&repository.join("mesh.nix"), "\"10.0.0.1\"", "\"10.0.0.9\"");
    let built = build_with(&repository, &out, &[]);
    assert_built(&built);
    assert!(stderr(&built).contains("E122"), "{}", stderr(&built));
    assert_eq!(reused(&built), (0, 5), "{}", stderr(&built));
}

#[test]
fn a_cache_reached_through_a_planted_link_is_not_read() {
    let (temporary, repository, out) = built_once();
    // the output's own, valid cache moved away and linked back in its place
    let cache = out.join(".mesh-cache");
    let moved = temporary.path().join("moved-cache");
    std::fs::rename(&cache, &moved).expect("moved");
    std::os::unix::fs::symlink(&moved, &cache).expect("linked");
    let before = std::fs::read(&moved).expect("the moved cache");
    let built = build_with(&repository, &out, &[]);
    assert_built(&built);
    assert!(stderr(&built).contains("E122"), "{}", stderr(&built));
    assert_eq!(reused(&built), (0, 5), "{}", stderr(&built));
    // what the link pointed at is left as it was, and the new cache is a plain file
    assert_eq!(std::fs::read(&moved).expect("still there"), before);
    assert!(
        std::fs::symlink_metadata(&cache)
            .expect("a cache")
            .is_file()
    );
}

#[test]
fn a_cache_of_another_format_is_e123_and_ignored() {
    let (_temporary, repository, out) = built_once();
    // the same record under an older format's first line (as an older meshc wrote it)
    let cache = std::fs::read(out.join(".mesh-cache")).expect("a cache");
    let (start, _) = fleet_part(&cache);
    let mut older = format!("mesh-cache/2 {}\n", "sha256:0").into_bytes();
    older.extend_from_slice(&cache[start..]);
    std::fs::write(out.join(".mesh-cache"), older).expect("written");
    let built = build_with(&repository, &out, &[]);
    assert_built(&built);
    assert!(stderr(&built).contains("E123"), "{}", stderr(&built));
    assert!(
        stderr(&built).contains("another format"),
        "{}",
        stderr(&built)
    );
    assert_eq!(reused(&built), (0, 5));
}

/// One repository named two ways (`--repo .` from inside it, and its absolute
/// path) is one repository: the build through either name reuses the other's.
#[test]
fn a_repository_named_relatively_reuses_the_cache_of_its_absolute_name() {
    let (_temporary, repository, out) = built_once();
    let relatively = std::process::Command::new(support::MESHC)
        .current_dir(&repository)
        .args(["build", "--repo", ".", "--out"])
        .arg(&out)
        .output()
        .expect("meshc runs");
    assert_built(&relatively);
    assert!(
        !stderr(&relatively).contains("E123"),
        "{}",
        stderr(&relatively)
    );
    assert_eq!(reused(&relatively), (5, 5), "{}", stderr(&relatively));
}

#[test]
fn a_cache_of_another_repository_is_e123_and_ignored() {
    let (temporary, repository) = repository();
    let (_other_temporary, other) = homelab_copy();
    let out = temporary.path().join("out");
    let elsewhere = temporary.path().join("elsewhere");
    assert_built(&build_with(&repository, &out, &[]));
    assert_built(&build_with(&other, &elsewhere, &[]));
    std::fs::copy(elsewhere.join(".mesh-cache"), out.join(".mesh-cache")).expect("copied");
    let built = build_with(&repository, &out, &[]);
    assert_built(&built);
    assert!(stderr(&built).contains("E123"), "{}", stderr(&built));
    assert_eq!(reused(&built), (0, 5));
}

#[test]
fn a_tampered_plan_in_the_output_is_e124_and_compiled_again() {
    let (temporary, repository, out) = built_once();
    let fresh = temporary.path().join("fresh");
    // another plan that verifies on its own, in the place of app1's
    std::fs::copy(out.join("nodes/app2.json"), out.join("nodes/app1.json")).expect("copied");
    // an edit elsewhere, so that the build does not stop at "nothing changed"
    app1_is_compiled_again_with_e124(&repository, &out, &fresh);
    // an output edited after a build is not "nothing changed"
    std::fs::write(out.join("nodes/db1.json"), b"{}").expect("written");
    let built = build_with(&repository, &out, &["--timings"]);
    assert_built(&built);
    assert_eq!(output_files(&out), output_files(&fresh));
}

#[test]
fn a_cache_is_the_same_bytes_after_an_edit_is_undone() {
    let (_temporary, repository, out) = built_once();
    let before = std::fs::read(out.join(".mesh-cache")).expect("a cache was written");
    let inventory = repository.join("mesh.nix");
    replace(&inventory, "title = \"app2\"", "title = \"two\"");
    let built = build_with(&repository, &out, &[]);
    assert_eq!(reused(&built), (4, 5), "{}", stderr(&built));
    replace(&inventory, "title = \"two\"", "title = \"app2\"");
    let built = build_with(&repository, &out, &[]);
    assert_eq!(reused(&built), (4, 5), "{}", stderr(&built));
    // the nodes' records are the same bytes (the nodes nothing reached are written
    // as the records they were read from, app2's as before the edit); only the fleet-wide part,
    // which holds the stamps of the files written again (app2's plan, twice), differs
    let after = std::fs::read(out.join(".mesh-cache")).expect("a cache was written");
    assert!(
        nodes_part(&before) == nodes_part(&after),
        "the nodes' part of the cache file changed"
    );
    assert!(
        before != after,
        "the stamps of the plan written again are recorded"
    );
}

/// A cache file's nodes' part: what follows the fleet-wide part.
fn nodes_part(cache: &[u8]) -> &[u8] {
    let (start, length) = fleet_part(cache);
    &cache[start + length..]
}

/// The count `--timings` gives after `prefix`.
fn counted(output: &Output, prefix: &str) -> usize {
    let text = stderr(output);
    text.lines()
        .find_map(|line| line.strip_prefix(prefix))
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no `{prefix}` count in:\n{text}"))
}

#[test]
fn files_whose_stamps_are_unchanged_are_not_read_back() {
    let (temporary, repository) = repository();
    let out = temporary.path().join("out");
    let fresh = temporary.path().join("fresh");
    let inventory = repository.join("mesh.nix");
    let pause = || std::thread::sleep(std::time::Duration::from_millis(50));
    assert_built(&build_with(&repository, &out, &[]));
    pause();
    // the first build's last files may share the clock tick of its cache, and
    // are read back; this build's cache is written well after every plan but
    // app2's, which the next build compiles again anyway
    replace(&inventory, "title = \"app2\"", "title = \"two\"");
    assert_built(&build_with(&repository, &out, &[]));
    pause();
    replace(&inventory, "title = \"two\"", "title = \"deux\"");
    let built = build_with(&repository, &out, &["--timings"]);
    assert_built(&built);
    assert_eq!(compiled(&built), ["app2"], "{}", stderr(&built));
    assert_eq!(
        counted(&built, "cache: plans read back: "),
        0,
        "{}",
        stderr(&built)
    );
    pause();
    // nothing changed: only what the last build wrote (app2's plan, the
    // manifest) can share its cache's tick and be read
    let built = build_with(&repository, &out, &["--timings"]);
    assert_nothing_changed(&built, true);
    let read = counted(&built, "cache: output files read back: ");
    assert!(read <= 2, "{read} files read back:\n{}", stderr(&built));
    assert!(output_files(&out).len() > 2 + read);
    assert_as_from_nothing(&repository, &out, &fresh);
}

#[test]
fn what_else_is_in_the_nodes_directory_is_recorded_and_its_changes_seen() {
    // the commit lists `OUT/nodes` and the cache's walk takes the plan files from
    // that listing; a file or directory that is no plan is kept by the commit and
    // must still be recorded, or no build after would find the output unchanged
    let (temporary, repository) = repository();
    let out = temporary.path().join("out");
    let inventory = repository.join("mesh.nix");
    let pause = || std::thread::sleep(std::time::Duration::from_millis(50));
    assert_built(&build_with(&repository, &out, &[]));
    write(&out.join("nodes/README.txt"), "plans of the fleet\n");
    std::fs::create_dir_all(out.join("nodes/notes")).expect("a directory");
    write(&out.join("nodes/notes/app1.txt"), "app1\n");
    replace(&inventory, "title = \"app2\"", "title = \"two\"");
    let built = build_with(&repository, &out, &["--timings"]);
    assert_built(&built);
    assert_eq!(compiled(&built), ["app2"], "{}", stderr(&built));
    assert_eq!(read(&out.join("nodes/README.txt")), "plans of the fleet\n");
    pause();
    let again = build_with(&repository, &out, &["--timings"]);
    assert_nothing_changed(&again, true);
    // a change to a file in the directory beneath is one to the output
    pause();
    write(&out.join("nodes/notes/app1.txt"), "app1, again\n");
    let changed = build_with(&repository, &out, &["--timings"]);
    assert_built(&changed);
    assert_nothing_changed(&changed, false);
}

#[test]
fn names_in_the_nodes_directory_that_are_not_utf8_are_kept_and_recorded() {
    // no node's plan has such a name: the commit leaves them, and the cache
    // records them by the names the walk gives them, so that the build after
    // finds nothing changed
    use std::os::unix::ffi::OsStrExt;
    let (temporary, repository) = repository();
    let out = temporary.path().join("out");
    let pause = || std::thread::sleep(std::time::Duration::from_millis(50));
    assert_built(&build_with(&repository, &out, &[]));
    let strays = [&b"\xff.txt"[..], &b"\xfe.json"[..]]
        .map(|name| out.join("nodes").join(std::ffi::OsStr::from_bytes(name)));
    for stray in &strays {
        std::fs::write(stray, "not a plan\n").expect("written");
    }
    let built = rebuilt_after_editing(&repository, &out, ("title = \"app2\"", "title = \"two\""));
    assert_eq!(compiled(&built), ["app2"], "{}", stderr(&built));
    assert!(out.join(".mesh-cache").exists(), "{}", stderr(&built));
    for stray in &strays {
        assert_eq!(read(stray), "not a plan\n");
    }
    pause();
    assert_nothing_changed(&build_with(&repository, &out, &["--timings"]), true);
}

#[test]
fn a_link_planted_in_the_nodes_directory_is_not_followed_and_keeps_no_cache() {
    // a directory outside the output, reached by a link among the plans: the
    // walk must not go through it, and an output holding a link is never one the
    // cache may call unchanged
    let (temporary, repository) = repository();
    let out = temporary.path().join("out");
    let outside = temporary.path().join("outside");
    std::fs::create_dir_all(&outside).expect("a directory");
    write(&outside.join("secret.txt"), "not the build's\n");
    assert_built(&build_with(&repository, &out, &[]));
    std::os::unix::fs::symlink(&outside, out.join("nodes/elsewhere")).expect("a link");
    let built = rebuilt_after_editing(&repository, &out, ("title = \"app2\"", "title = \"two\""));
    assert!(!out.join(".mesh-cache").exists(), "{}", stderr(&built));
    assert_eq!(read(&outside.join("secret.txt")), "not the build's\n");
}

#[test]
fn a_plan_rewritten_with_its_size_and_time_restored_is_e124_and_compiled_again() {
    let (temporary, repository, out) = built_once();
    let fresh = temporary.path().join("fresh");
    assert_built(&build_with(&repository, &fresh, &["--no-cache"]));
    // past the clock tick of the build's writes, so that its stamps are trusted
    std::thread::sleep(std::time::Duration::from_millis(50));
    let plan = out.join("nodes/app1.json");
    let original = std::fs::read(&plan).expect("a plan");
    // the same length, one byte different, and the modification time put back:
    // only the change time (which no user can set) says it was touched
    let mut tampered = original.clone();
    let at = tampered
        .iter()
        .rposition(|byte| byte.is_ascii_digit())
        .expect("a digit");
    tampered[at] = if tampered[at] == b'0' { b'1' } else { b'0' };
    rewrite_keeping_time(&plan, &tampered);
    // nothing else changed: the build must not call the output unchanged
    let built = build_with(&repository, &out, &["--timings"]);
    assert_built(&built);
    assert_nothing_changed(&built, false);
    assert_eq!(output_files(&out), output_files(&fresh));
    // again, with an edit elsewhere: the reuse of app1's plan must not trust it
    std::thread::sleep(std::time::Duration::from_millis(50));
    rewrite_keeping_time(&plan, &tampered);
    app1_is_compiled_again_with_e124(&repository, &out, &fresh);
}

/// Edits app2's entry and builds into `out`: app1's plan in `out` was tampered
/// with, so the build notes it (E124) and compiles it again with app2, and the
/// output is a build from nothing's (into `fresh`).
fn app1_is_compiled_again_with_e124(repository: &Path, out: &Path, fresh: &Path) {
    replace(
        &repository.join("mesh.nix"),
        "title = \"app2\"",
        "title = \"two\"",
    );
    let built = build_with(repository, out, &["--timings"]);
    assert_built(&built);
    assert!(stderr(&built).contains("E124"), "{}", stderr(&built));
    assert_eq!(compiled(&built), ["app1", "app2"], "{}", stderr(&built));
    assert_as_from_nothing(repository, out, fresh);
}

/// Writes `bytes` over `plan` and puts its modification time back as it was.
fn rewrite_keeping_time(plan: &Path, bytes: &[u8]) {
    let modified = std::fs::metadata(plan)
        .and_then(|metadata| metadata.modified())
        .expect("a time");
    std::fs::write(plan, bytes).expect("written");
    std::fs::File::options()
        .write(true)
        .open(plan)
        .and_then(|file| file.set_modified(modified))
        .expect("time set");
}

#[test]
fn a_trace_added_to_an_entry_whose_value_is_unchanged_is_said() {
    // the entry evaluates to what it did and no position in it moves: its
    // digest alone would call it unchanged, and its node would not trace again
    let (temporary, repository, out) = built_once();
    let fresh = temporary.path().join("fresh");
    replace(
        &repository.join("mesh.nix"),
        "settings.web.title = \"app1\";",
        "settings.web.title = builtins.trace \"entry\" \"app1\";",
    );
    let (built, _) = beside_a_build_from_nothing(&repository, &out, &fresh, "a trace");
    assert!(said(&built, &out).contains("entry"), "{}", stderr(&built));
}

/// A copy of the repository built once into its `out`: the temporary directory
/// (which holds both while it lives), the repository and the output.
fn built_once() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let (temporary, repository) = repository();
    let out = temporary.path().join("out");
    assert_built(&build_with(&repository, &out, &[]));
    (temporary, repository, out)
}

/// Replaces `from` with `to` in the inventory and builds into `out` again (with
/// `--timings`), asserting that it built.
fn rebuilt_after_editing(repository: &Path, out: &Path, (from, to): (&str, &str)) -> Output {
    replace(&repository.join("mesh.nix"), from, to);
    let built = build_with(repository, out, &["--timings"]);
    assert_built(&built);
    built
}

/// Asserts whether the build found nothing changed in its output and inputs.
fn assert_nothing_changed(output: &Output, nothing: bool) {
    assert_eq!(
        stderr(output).contains("nothing changed"),
        nothing,
        "{}",
        stderr(output)
    );
}

/// The phases `--timings` names, with when each ended (milliseconds from the start).
fn phases(output: &Output) -> Vec<(String, f64)> {
    let text = stderr(output);
    let Some(line) = text
        .lines()
        .find_map(|line| line.strip_prefix("timings: phases (ms from the start): "))
    else {
        return Vec::new();
    };
    line.split(", ")
        .map(|phase| {
            let (name, elapsed) = phase.rsplit_once(' ').expect("a phase and its time");
            (name.to_string(), elapsed.parse().expect("milliseconds"))
        })
        .collect()
}

#[test]
fn timings_name_the_phases_of_a_build_in_the_order_they_end() {
    let (temporary, repository) = repository();
    let out = temporary.path().join("out");
    let quiet = build_with(&repository, &out, &[]);
    assert_built(&quiet);
    assert!(phases(&quiet).is_empty(), "{}", stderr(&quiet));
    let built = rebuilt_after_editing(&repository, &out, ("title = \"app2\"", "title = \"two\""));
    let marked = phases(&built);
    let names: Vec<&str> = marked.iter().map(|(name, _)| name.as_str()).collect();
    let expected = [
        "cache record read",
        "cache opened",
        "first halves",
        "link",
        "second halves",
        "merged",
        "plans committed",
        "output walked",
        "cache saved",
    ];
    let mut rest = names.iter();
    for phase in expected {
        assert!(
            rest.any(|name| *name == phase),
            "`{phase}` is missing or out of order in {names:?}"
        );
    }
    // the inventory changed, so it was digested while the record was read
    assert!(names.contains(&"inventory digested"), "{names:?}");
    // and the build is not a no-op, so the nodes' records were parsed meanwhile,
    // and the plan files they name stamped before any node was compiled
    let position = |phase: &str| names.iter().position(|name| *name == phase);
    for early in ["cache nodes read", "plan files stamped"] {
        assert!(
            position(early).is_some() && position(early) < position("cache opened"),
            "`{early}` in {names:?}"
        );
    }
    assert!(
        marked.windows(2).all(|pair| pair[0].1 <= pair[1].1),
        "{marked:?}"
    );
    // and the memory resident at the end of each, in the same order (this runs on
    // Linux, whose `/proc` says); a build holds more than the bare process's 1 MiB
    let text = stderr(&built);
    let resident = text
        .lines()
        .find_map(|line| {
            line.strip_prefix("timings: resident memory (MiB at the end of each phase): ")
        })
        .unwrap_or_else(|| panic!("no resident memory line in:\n{text}"));
    let resident: Vec<(&str, u64)> = resident
        .split(", ")
        .map(|phase| {
            let (name, mebibytes) = phase.rsplit_once(' ').expect("a phase and its memory");
            (name, mebibytes.parse().expect("MiB"))
        })
        .collect();
    assert_eq!(
        resident.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
        names,
        "{resident:?}"
    );
    assert!(
        resident.iter().all(|(_, mebibytes)| *mebibytes > 1),
        "{resident:?}"
    );
}

#[test]
fn a_broken_build_reports_what_it_evaluated_again_without_building_from_nothing() {
    let (temporary, repository, out) = built_once();
    let cache_before = std::fs::read(out.join(".mesh-cache")).expect("a cache");
    let plans_before = output_files(&out);
    // web's shapes throw: said by the nodes that run web, which are the only ones
    // evaluated again; the build fails as a build from nothing fails, saying the same
    replace(
        &repository.join("modules/web/module.nix"),
        "(mesh.user { name = \"web\";",
        "(mesh.user { name = throw \"no web user\";",
    );
    let fresh = temporary.path().join("fresh");
    let (built, _) = beside_a_build_from_nothing(&repository, &out, &fresh, "web broken");
    assert_eq!(built.status.code(), Some(1), "{}", stderr(&built));
    assert_eq!(evaluated(&built), ["app1", "app2"], "{}", stderr(&built));
    // the output and its cache are as the last build left them
    assert_eq!(output_files(&out), plans_before);
    assert_eq!(
        std::fs::read(out.join(".mesh-cache")).expect("the cache"),
        cache_before
    );
    // mended: the nodes that run web are compiled again from the last good build
    replace(
        &repository.join("modules/web/module.nix"),
        "(mesh.user { name = throw \"no web user\";",
        "(mesh.user { name = \"web\";",
    );
    let built = build_with(&repository, &out, &["--timings"]);
    assert_built(&built);
    assert_eq!(reused(&built), (5, 5), "{}", stderr(&built));
}

#[test]
fn a_repository_that_shadows_a_standard_module_builds_incrementally_and_says_so_each_time() {
    let (temporary, repository) = repository();
    // the repository's own `users`, the standard one's text: noted (E108) by
    // every build, which is no reason to build from nothing
    let standard = Path::new(env!("CARGO_MANIFEST_DIR")).join("../stdlib-modules/users/module.nix");
    std::fs::create_dir_all(repository.join("modules/users")).expect("modules/users");
    write(
        &repository.join("modules/users/module.nix"),
        &read(&standard),
    );
    let out = temporary.path().join("out");
    let first = build_with(&repository, &out, &[]);
    assert_built(&first);
    assert!(stderr(&first).contains("E108"), "{}", stderr(&first));
    assert!(out.join(".mesh-cache").exists(), "the cache is kept");
    let fresh = temporary.path().join("fresh");
    for step in 0..3 {
        if step == 1 {
            replace(
                &repository.join("mesh.nix"),
                "title = \"app2\"",
                "title = \"two\"",
            );
        }
        if step == 2 {
            replace(
                &repository.join("modules/users/module.nix"),
                "{",
                "# the repository's own\n{",
            );
        }
        let context = format!("step {step}");
        let (built, _) = beside_a_build_from_nothing(&repository, &out, &fresh, &context);
        assert_built(&built);
        assert_eq!(output_files(&out), output_files(&fresh), "step {step}");
        let expected = [
            // nothing changed: every plan reused, the note said again
            &[][..],
            &["app2"][..],
            // the shadowing module changed: the nodes that run it
            &["app1", "gateway"][..],
        ];
        assert_eq!(
            evaluated(&built),
            expected[step],
            "step {step}: {}",
            stderr(&built)
        );
    }
}

/// The manifest's digest is recorded from the bytes the build wrote, not read back
/// from the file: a manifest rewritten with the same bytes (so its stamp is new
/// and the next build reads and hashes it) is found unchanged.
#[test]
fn a_manifest_rewritten_with_its_own_bytes_is_found_unchanged() {
    let (_temporary, repository, out) = built_once();
    replace(
        &repository.join("mesh.nix"),
        "title = \"app2\"",
        "title = \"two\"",
    );
    assert_built(&build_with(&repository, &out, &[]));
    std::thread::sleep(std::time::Duration::from_millis(50));
    let manifest = out.join("manifest.json");
    let bytes = std::fs::read(&manifest).expect("a manifest");
    std::fs::write(&manifest, &bytes).expect("rewritten");
    let built = build_with(&repository, &out, &["--timings"]);
    assert_built(&built);
    assert!(
        counted(&built, "cache: output files read back: ") >= 1,
        "{}",
        stderr(&built)
    );
    assert_nothing_changed(&built, true);
}

/// The commit takes `OUT/nodes` from a listing made while the link was, before any
/// plan was staged there: a node new to the output is not in it, and its plan is
/// still recorded (the next build finds nothing changed), as a plan a node no
/// longer has is still removed.
#[test]
fn a_node_added_or_removed_is_recorded_by_the_commit_that_wrote_it() {
    let (_temporary, repository, out) = built_once();
    let built = rebuilt_after_editing(
        &repository,
        &out,
        (
            "    mq1 = {",
            "    extra = {\n      key = \"age1w7vsd254swjfk3nrgznjn2ztgld8nnths327dq0k9n2ah02xagrqcl46fn\";\n      address = \"10.0.0.41\";\n      modules = [ \"node-exporter\" ];\n    };\n    mq1 = {",
        ),
    );
    // the node names are part of the fleet: every node is compiled again
    assert_eq!(reused(&built).1, 6, "{}", stderr(&built));
    assert!(out.join("nodes/extra.json").is_file());
    assert_nothing_changed(&build_with(&repository, &out, &[]), true);
    let text = read(&repository.join("mesh.nix"));
    let start = text.find("    extra = {").expect("the added node");
    let end = start + text[start..].find("    mq1 = {").expect("the next node");
    write(
        &repository.join("mesh.nix"),
        &format!("{}{}", &text[..start], &text[end..]),
    );
    let built = build_with(&repository, &out, &[]);
    assert_built(&built);
    assert!(!out.join("nodes/extra.json").exists());
    assert_nothing_changed(&build_with(&repository, &out, &[]), true);
}

/// A build that changed no inventory but compiles (a module changed) has the
/// inventory parsed while the record's nodes are read, once, for every worker; it
/// is not digested (its entries are the record's).
#[test]
fn a_module_change_has_the_inventory_parsed_while_the_record_is_read() {
    let (_temporary, repository, out) = built_once();
    write(&repository.join("modules/web/title.nix"), "\"retitled\"\n");
    let built = build_with(&repository, &out, &["--timings"]);
    assert_built(&built);
    let names: Vec<String> = phases(&built).into_iter().map(|(name, _)| name).collect();
    let position = |phase: &str| names.iter().position(|name| name == phase);
    assert!(
        position("inventory parsed").is_some()
            && position("inventory parsed") < position("cache opened"),
        "{names:?}"
    );
    assert!(position("inventory digested").is_none(), "{names:?}");
    assert!(reused(&built).0 > 0, "{}", stderr(&built));
}

#[test]
fn a_plan_that_changed_is_not_read_back_to_be_compared_and_one_that_did_not_is() {
    // the writer compares a node's new plan with the file only when the last
    // build's record does not already say the file holds another plan
    let (temporary, repository, out) = built_once();
    let fresh = temporary.path().join("fresh");
    let before = output_files(&out);
    write(
        &repository.join("modules/shop/sslmode.nix"),
        "\"verify-full\"\n",
    );
    let built = build_with(&repository, &out, &["--timings"]);
    assert_built(&built);
    let changed = compiled(&built);
    // the nodes compiled again whose plans are the same (a provider whose
    // consumers changed) are compared; those whose plans changed are not
    let after = output_files(&out);
    let same = changed
        .iter()
        .filter(|node| {
            let plan = format!("nodes/{node}.json");
            after.get(&plan) == before.get(&plan)
        })
        .count();
    assert!(same < changed.len(), "{}", stderr(&built));
    assert_eq!(
        counted(&built, "cache: plans compared with the output's: "),
        same,
        "{}",
        stderr(&built)
    );
    // a default every node overrides: the nodes of the module compiled again, to
    // the same plans, each compared with its file and left as it is
    write(&repository.join("modules/web/title.nix"), "\"other\"\n");
    let before = output_files(&out);
    let built = build_with(&repository, &out, &["--timings"]);
    assert_built(&built);
    let again = compiled(&built);
    assert!(!again.is_empty(), "{}", stderr(&built));
    assert_eq!(
        counted(&built, "cache: plans compared with the output's: "),
        again.len(),
        "{}",
        stderr(&built)
    );
    assert_eq!(output_files(&out), before);
    assert_as_from_nothing(&repository, &out, &fresh);
}

#[test]
fn a_plan_written_again_with_the_same_bytes_is_read_back_and_kept() {
    // the record names a plan file by its plan's digest: bytes that are that
    // plan's file are found to be it when read back, with no other record of them
    let (temporary, repository, out) = built_once();
    let fresh = temporary.path().join("fresh");
    std::thread::sleep(std::time::Duration::from_millis(50));
    let plan = out.join("nodes/app1.json");
    let bytes = std::fs::read(&plan).expect("a plan");
    std::fs::remove_file(&plan).expect("removed");
    std::fs::write(&plan, &bytes).expect("written again");
    let built = build_with(&repository, &out, &["--timings"]);
    assert_built(&built);
    assert_nothing_changed(&built, true);
    replace(
        &repository.join("mesh.nix"),
        "title = \"app2\"",
        "title = \"two\"",
    );
    std::fs::remove_file(&plan).expect("removed");
    std::fs::write(&plan, &bytes).expect("written again");
    let built = build_with(&repository, &out, &["--timings"]);
    assert_built(&built);
    assert_eq!(compiled(&built), ["app2"], "{}", stderr(&built));
    assert_eq!(counted(&built, "cache: plans read back: "), 1);
    assert_as_from_nothing(&repository, &out, &fresh);
}

/// A repository of one node and one module, its inventory `inventory`.
fn repository_with_inventory(inventory: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let repository = temporary.path().join("repo");
    std::fs::create_dir_all(repository.join("modules/site")).expect("modules/site");
    write(
        &repository.join("modules/site/module.nix"),
        "{ mesh, ... }:\n{\n  description = \"a directory\";\n  shapes = { ... }: [ (mesh.directory { path = \"/srv\"; }) ];\n}\n",
    );
    write(&repository.join("mesh.nix"), inventory);
    (temporary, repository)
}

/// The cache digests the inventory before a build compiles, parsing it and (unless
/// it is plain data) evaluating it: on the evaluator's stack, as the workers do,
/// since `meshc build` opens the cache on its main thread. Before, a first build of
/// an inventory that recursed 20,000 calls deep, or that nested 3,000 lists,
/// overflowed the main thread's stack (in a debug build) and the build was killed,
/// while `meshc check` built it.
#[test]
fn a_deep_inventory_is_digested_on_the_evaluation_stack() {
    let node = "nodes.web1 = { key = \"age12y52ld3kt27sk7w3rpt4d6n0mpndj2v2u02z7q8ra8sjr0saepcshezt9w\"; modules = [ \"site\" ];";
    let recursive = format!(
        "let f = n: if n == 0 then 0 else 1 + f (n - 1); in\n{{ {node} base.paths = if f 20000 == 20000 then [ ] else [ \"/x\" ]; }}; }}\n"
    );
    let (temporary, repository) = repository_with_inventory(&recursive);
    let out = temporary.path().join("out");
    assert_built(&build_with(&repository, &out, &[]));
    assert!(out.join("nodes/web1.json").is_file());

    let depth = 3000;
    let nested = format!(
        "{{ {node} base.paths = [ ]; }}; deep = {}1{}; }}\n",
        "[ ".repeat(depth),
        " ]".repeat(depth)
    );
    let (temporary, repository) = repository_with_inventory(&nested);
    let out = temporary.path().join("out");
    let built = build_with(&repository, &out, &[]);
    let said = stderr(&built);
    assert_eq!(built.status.code(), Some(1), "{said}");
    assert!(said.contains("E103") && said.contains("`deep`"), "{said}");
}

/// A build that waits for another build into its output reads the cache's record
/// only once the other is done. Before, it read the record first and then waited:
/// with nothing changed by the record it read, it said so and returned at once,
/// and the other build's plans, of another state of the repository, were what the
/// output held after both; with something changed, it could keep plans the other
/// build had since replaced. Here the other build is played by the test: it holds
/// the lock (`flock` on `OUT`) while the build waits, and puts in `OUT` what a
/// build of an edited repository wrote.
#[test]
fn a_build_that_waits_for_the_output_reads_the_cache_after_the_build_before() {
    let (temporary, repository, out) = built_once();
    // what a build of the repository with one entry edited leaves
    let other = temporary.path().join("other");
    let edit = ("title = \"app2\"", "title = \"two\"");
    replace(&repository.join("mesh.nix"), edit.0, edit.1);
    assert_built(&build_with(&repository, &other, &[]));
    replace(&repository.join("mesh.nix"), edit.1, edit.0);

    let before = std::fs::read(out.join("nodes/app2.json")).expect("app2's plan");
    let held = std::fs::File::open(&out).expect("the output");
    held.lock().expect("the output's lock");
    let mut waiting = std::process::Command::new(support::MESHC)
        .arg("build")
        .arg("--repo")
        .arg(&repository)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("meshc runs");
    wait_for_the_lock(&mut waiting);
    // the other build's output takes the place of the first (renamed: its files
    // keep their stamps, as if written there)
    for entry in std::fs::read_dir(&other).expect("the other output") {
        let name = entry.expect("an entry").file_name();
        let place = out.join(&name);
        if place.is_dir() {
            std::fs::remove_dir_all(&place).expect("removed");
        } else if place.exists() {
            std::fs::remove_file(&place).expect("removed");
        }
        std::fs::rename(other.join(&name), &place).expect("renamed");
    }
    assert_ne!(
        std::fs::read(out.join("nodes/app2.json")).expect("app2's plan"),
        before,
        "the other build's plan for app2 is another"
    );
    drop(held);
    let waited = waiting.wait_with_output().expect("meshc ends");
    assert_built(&waited);
    assert_nothing_changed(&waited, false);
    assert_as_from_nothing(&repository, &out, &temporary.path().join("fresh"));
}

/// Waits until `build` sleeps on a file lock (its `wchan`, where the kernel says),
/// or has ended (a build that does not take the lock before reading its cache never
/// waits), or 5 seconds have passed (a kernel that hides `wchan`: a build still
/// running then is waiting, as it cannot end while the lock is held).
fn wait_for_the_lock(build: &mut std::process::Child) {
    let wchan = format!("/proc/{}/wchan", build.id());
    for _ in 0..500 {
        if build.try_wait().expect("the build").is_some() {
            return;
        }
        if std::fs::read_to_string(&wchan)
            .is_ok_and(|waiting| waiting.contains("flock") || waiting.contains("locks_lock"))
        {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
