//! Embeds the standard module library (`../stdlib-modules`) and the book's error
//! pages (`../book/src/errors/CODE.md`, for `meshc explain`) into the compiler, so
//! they work from any directory, and a fingerprint of the sources of the compiler
//! and the crates it builds on (`src/`, `../lang/src`, `../plan/src`), which the
//! build cache keys on. Files are listed in sorted order for reproducible builds.
//! Must not read anything outside those directories.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

fn collect(directory: &Path, base: &Path, files: &mut Vec<(String, PathBuf)>) {
    println!("cargo:rerun-if-changed={}", directory.display());
    let Ok(entries) = fs::read_dir(directory) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, base, files);
        } else if let Ok(relative) = path.strip_prefix(base) {
            println!("cargo:rerun-if-changed={}", path.display());
            files.push((relative.to_string_lossy().into_owned(), path.clone()));
        }
    }
}

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let library = manifest.join("..").join("stdlib-modules");
    let mut files = Vec::new();
    collect(&library, &library, &mut files);
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("stdlib.rs");
    let mut generated = fs::File::create(&out).expect("OUT_DIR is writable");
    writeln!(
        generated,
        "/// The standard module library: (path relative to the library, content)."
    )
    .expect("write");
    writeln!(generated, "pub static FILES: &[(&str, &[u8])] = &[").expect("write");
    for (relative, path) in files {
        let absolute = path.canonicalize().unwrap_or(path);
        writeln!(
            generated,
            "    ({relative:?}, include_bytes!({:?})),",
            absolute.display().to_string()
        )
        .expect("write");
    }
    writeln!(generated, "];").expect("write");
    error_pages(&manifest.join("..").join("book").join("src").join("errors"));
    sources_fingerprint(&[
        manifest.join("src"),
        manifest.join("..").join("lang").join("src"),
        manifest.join("..").join("plan").join("src"),
    ]);
}

/// `sources.rs`: a fingerprint (two 64-bit FNV-1a hashes of every file's path and
/// bytes, in sorted order) of the sources a plan depends on, so that a cache made by
/// a compiler built from other sources is never trusted, whatever its version says.
fn sources_fingerprint(directories: &[PathBuf]) {
    let mut first: u64 = 0xcbf2_9ce4_8422_2325;
    let mut second: u64 = 0x8422_2325_cbf2_9ce4;
    let mut feed = |bytes: &[u8]| {
        for byte in bytes {
            first = (first ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3);
            second = (second ^ u64::from(*byte))
                .wrapping_mul(0x0000_0100_0000_01b3)
                .rotate_left(5);
        }
    };
    for directory in directories {
        let mut files = Vec::new();
        collect(directory, directory, &mut files);
        for (relative, path) in files {
            feed(relative.as_bytes());
            feed(&fs::read(&path).unwrap_or_default());
        }
    }
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("sources.rs");
    fs::write(
        &out,
        format!("/// The compiler's sources, fingerprinted.\npub const FINGERPRINT: &str = \"{first:016x}{second:016x}\";\n"),
    )
    .expect("OUT_DIR is writable");
}

/// `error_pages.rs`: every `CODE.md` of the book's error directory, sorted by code.
fn error_pages(directory: &Path) {
    println!("cargo:rerun-if-changed={}", directory.display());
    let mut pages: Vec<(String, PathBuf)> = fs::read_dir(directory)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter_map(|path| {
                    let stem = path.file_stem()?.to_str()?.to_string();
                    let is_page = path.extension().is_some_and(|e| e == "md")
                        && stem.len() == 4
                        && stem.starts_with('E');
                    is_page.then_some((stem, path))
                })
                .collect()
        })
        .unwrap_or_default();
    pages.sort();
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("error_pages.rs");
    let mut generated = fs::File::create(&out).expect("OUT_DIR is writable");
    writeln!(generated, "/// The book's error pages: (code, markdown).").expect("write");
    writeln!(generated, "pub static PAGES: &[(&str, &str)] = &[").expect("write");
    for (code, path) in pages {
        println!("cargo:rerun-if-changed={}", path.display());
        let absolute = path.canonicalize().unwrap_or(path);
        writeln!(
            generated,
            "    ({code:?}, include_str!({:?})),",
            absolute.display().to_string()
        )
        .expect("write");
    }
    writeln!(generated, "];").expect("write");
}
