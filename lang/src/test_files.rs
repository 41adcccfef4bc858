//! The `.nix` files tests run over: every one the repository has.

/// The repository's root.
pub(crate) fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `.nix` files of the repository's tests, standard modules and examples.
pub(crate) fn repository_nix_files() -> Vec<std::path::PathBuf> {
    let root = root();
    let mut files = Vec::new();
    for directory in ["lang/tests", "meshc/tests", "stdlib-modules", "examples"] {
        nix_files(&root.join(directory), &mut files);
    }
    assert!(files.len() > 100, "found only {} .nix files", files.len());
    files
}

pub(crate) fn nix_files(directory: &std::path::Path, files: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(directory) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            nix_files(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "nix") {
            files.push(path);
        }
    }
}
