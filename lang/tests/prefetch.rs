//! Files read and parsed ahead (`Machine::with_prefetch`): an evaluation gives the
//! same values and the same diagnostics, at the same places, with it as without;
//! it reads nothing the sandbox forbids and nothing but regular `.nix` files a
//! compiled file names; and it reports nothing of a file it read ahead but never
//! imported.

use std::cell::RefCell;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use lang::loader::{Entries, FileKind, Loader};
use lang::{Diagnostic, Limits, Machine, MemoryLoader, Span};

/// A loader that remembers every file it was asked to read.
struct Recording {
    files: MemoryLoader,
    reads: RefCell<Vec<PathBuf>>,
}

impl Loader for Recording {
    fn read(&self, path: &Path, max_len: u64) -> io::Result<Vec<u8>> {
        self.reads.borrow_mut().push(path.to_path_buf());
        self.files.read(path, max_len)
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        self.files.kind(path)
    }

    fn list(&self, path: &Path) -> io::Result<Entries> {
        self.files.list(path)
    }
}

/// A repository of `count` imported files, each importing one more, beside a
/// `.nix` file with a syntax error that is only named (`./unused.nix`), a `.nix`
/// file outside the root, and a data file. `broken` imports a file whose scope
/// error is the evaluation's.
fn repository(count: usize, broken: Option<usize>) -> Recording {
    let mut files = MemoryLoader::new();
    let list: Vec<String> = (0..count).map(|k| format!("./f{k}.nix")).collect();
    files.insert(
        "/r/main.nix",
        format!(
            "let\n  parts = map import [ {} ];\n  named = ./unused.nix;\n  outside = /elsewhere/x.nix;\n  notes = ./notes.txt;\nin {{\n  total = builtins.foldl' (a: b: a + b) 0 parts;\n  names = map builtins.baseNameOf [ named outside notes ];\n}}\n",
            list.join(" ")
        ),
    );
    for k in 0..count {
        files.insert(
            format!("/r/f{k}.nix"),
            format!("let x = {k}; in rec {{ y = x + (import ./g{k}.nix).z; }}.y\n"),
        );
        let body = if broken == Some(k) {
            "{ z = missing_name; }\n".to_string()
        } else {
            format!("{{ z = {}; }}\n", k * 2)
        };
        files.insert(format!("/r/g{k}.nix"), body);
    }
    files.insert("/r/unused.nix", "{ this is not ( valid");
    files.insert("/r/notes.txt", "not read");
    files.insert("/elsewhere/x.nix", "1");
    Recording {
        files,
        reads: RefCell::new(Vec::new()),
    }
}

/// What an evaluation of `/r/main.nix` says: its printed value, or each error's
/// code, message and place (file name, line, column).
fn evaluate(loader: Rc<Recording>, prefetch: bool) -> Result<String, Vec<String>> {
    evaluated(loader, prefetch).1
}

/// The machine that evaluated `/r/main.nix` (with its sources), and what it says.
fn evaluated(loader: Rc<dyn Loader>, prefetch: bool) -> (Machine, Result<String, Vec<String>>) {
    let machine = Machine::new(loader, vec![PathBuf::from("/r")], Limits::default());
    let mut machine = if prefetch {
        machine.with_prefetch()
    } else {
        machine
    };
    let value = machine
        .eval_file(Path::new("/r/main.nix"))
        .and_then(|value| {
            machine
                .force_deep(&value, Span::default())
                .map_err(|error| vec![*error])
        });
    let said = match value {
        Ok(value) => machine
            .print_strict(&value)
            .map(|printed| String::from_utf8_lossy(&printed).into_owned())
            .map_err(|error| vec![format!("{error:?}")]),
        Err(errors) => Err(errors.iter().map(|error| placed(&machine, error)).collect()),
    };
    (machine, said)
}

fn placed(machine: &Machine, error: &Diagnostic) -> String {
    let place = error.primary.as_ref().and_then(|label| {
        let file = machine.sources.get(label.span.file)?;
        let (line, column) = file.line_column(label.span.start);
        Some(format!("{}:{line}:{column}", file.name))
    });
    format!("{:?} {} at {place:?}", error.code, error.message)
}

#[test]
fn values_are_the_same_with_files_parsed_ahead() {
    for count in [1, 7, 150] {
        let plain = evaluate(Rc::new(repository(count, None)), false);
        let ahead = evaluate(Rc::new(repository(count, None)), true);
        let expected: usize = (0..count).map(|k| 3 * k).sum();
        assert_eq!(
            plain,
            Ok(format!(
                "{{ names = [ \"unused.nix\" \"x.nix\" \"notes.txt\" ]; total = {expected}; }}"
            ))
        );
        assert_eq!(ahead, plain, "{count} files");
    }
}

#[test]
fn errors_are_the_same_with_files_parsed_ahead() {
    for broken in [0, 3, 99] {
        let plain = evaluate(Rc::new(repository(100, Some(broken))), false);
        let ahead = evaluate(Rc::new(repository(100, Some(broken))), true);
        let errors = plain.clone().expect_err("an undefined variable");
        assert!(
            errors[0].contains(&format!("/r/g{broken}.nix:1:")),
            "{errors:?}"
        );
        assert_eq!(ahead, plain, "g{broken}.nix broken");
    }
}

#[test]
fn only_named_nix_files_inside_the_root_are_read_ahead() {
    let loader = Rc::new(repository(5, None));
    evaluate(loader.clone(), true).expect("evaluates");
    let reads = loader.reads.borrow().clone();
    // read ahead: named by a literal, never imported (its syntax error unreported)
    assert!(reads.contains(&PathBuf::from("/r/unused.nix")), "{reads:?}");
    for read in &reads {
        assert!(read.starts_with("/r"), "read outside the root: {read:?}");
        assert_eq!(
            read.extension().and_then(|extension| extension.to_str()),
            Some("nix"),
            "{read:?}"
        );
    }
    // each file once: an import takes the bytes read ahead
    let mut unique = reads.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), reads.len(), "{reads:?}");
}

/// A file named and never imported costs nothing without reading ahead: one that
/// would take the files read ahead and not imported yet past their bound (here a
/// 65 MiB file only asked about, `builtins.pathExists ./big.nix`) is neither read
/// ahead nor kept among the sources, and the value is the same.
#[test]
fn a_named_file_past_the_bound_is_left_to_its_import() {
    let mut files = MemoryLoader::new();
    files.insert(
        "/r/main.nix",
        "{ named = builtins.pathExists ./big.nix; small = import ./small.nix; }\n",
    );
    files.insert("/r/small.nix", "{ z = ./z.nix; }.z\n");
    files.insert("/r/z.nix", "1\n");
    let mut big = vec![b' '; 65 << 20];
    big.push(b'1');
    files.insert("/r/big.nix", big);
    let value = |prefetch: bool| {
        let (machine, said) = evaluated(Rc::new(files.clone()), prefetch);
        let kept = machine.sources.find_path(Path::new("/r/big.nix")).is_some();
        let small = machine.sources.find_path(Path::new("/r/z.nix")).is_some();
        (said.expect("evaluates"), kept, small)
    };
    let plain = value(false);
    assert_eq!(
        plain,
        (
            "{ named = true; small = /r/z.nix; }".to_string(),
            false,
            false
        )
    );
    let (printed, kept, small) = value(true);
    assert_eq!(printed, plain.0);
    // a small file named is still read ahead
    assert!(small, "./z.nix read ahead");
    assert!(
        !kept,
        "a 65 MiB file never imported was read ahead and kept"
    );
}

/// A set naming 3,000 files of which the program imports two (nixpkgs'
/// `all-packages.nix`): a window of files is read ahead, not every file named (all
/// read at naming, such a program took five times as long), and the value is the
/// same.
#[test]
fn a_program_importing_few_of_the_files_it_names_reads_few_ahead() {
    let mut files = MemoryLoader::new();
    let packages: Vec<String> = (0..3000)
        .map(|k| format!("p{k} = import ./pkgs/p{k}.nix;"))
        .collect();
    files.insert(
        "/r/main.nix",
        format!(
            "let all = {{ {} }}; in all.p2500 + all.p17",
            packages.join(" ")
        ),
    );
    for k in 0..3000 {
        files.insert(format!("/r/pkgs/p{k}.nix"), format!("{k}"));
    }
    let plain = Rc::new(Recording {
        files: files.clone(),
        reads: RefCell::new(Vec::new()),
    });
    let ahead = Rc::new(Recording {
        files,
        reads: RefCell::new(Vec::new()),
    });
    assert_eq!(evaluate(plain.clone(), false), Ok("2517".to_string()));
    assert_eq!(evaluate(ahead.clone(), true), Ok("2517".to_string()));
    assert_eq!(plain.reads.borrow().len(), 3);
    let read = ahead.reads.borrow().len();
    assert!(read <= 3 + 2 * 64, "{read} files read for 3 imported");
}
