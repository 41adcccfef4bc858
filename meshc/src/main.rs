//! The `meshc` binary: chooses the allocator and runs the command line
//! (`meshc::run`). Must hold nothing else: commands live in `commands/`.
#![forbid(unsafe_code)]

// The evaluator makes and frees many small objects (thunks, frames, sets); mimalloc
// serves them from thread-local free lists much as Nix's Boehm GC does: 1.3x to 2.4x
// less time on the evaluation benchmarks of bench/lang. The binary chooses the
// allocator; the compiler library does not.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    meshc::run()
}
