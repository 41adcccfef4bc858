//! The `mesh-apply` binary: parses flags and hands them to the applier library.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("error: mesh-apply is not implemented yet");
    std::process::exit(1);
}
