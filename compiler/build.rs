//! Embeds the standard module library (`../stdlib-modules`) into `meshc`, so it works
//! from any directory. Files are listed in sorted order for reproducible builds.

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
}
