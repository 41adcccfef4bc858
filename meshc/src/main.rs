//! The `meshc` binary: chooses the allocator and runs the command line
//! (`meshc::run`). Must hold nothing else: commands live in `commands/`.
#![forbid(unsafe_code)]

// The evaluator makes and frees many small objects (thunks, frames, sets); mimalloc
// serves them from thread-local free lists much as Nix's Boehm GC does: 1.3x to 2.4x
// less time on the evaluation benchmarks of bench/lang. The binary chooses the
// allocator; the compiler library does not.
// alejandra (the formatter `meshc fmt` uses as a library) declares this same allocator
// as the global one on the targets below, and a program may have only one: there the
// binary leaves it to alejandra, elsewhere it declares it
#[cfg(not(any(
    all(
        target_arch = "aarch64",
        target_vendor = "unknown",
        target_os = "linux",
        target_env = "musl"
    ),
    all(
        target_arch = "arm",
        target_vendor = "unknown",
        target_os = "linux",
        target_env = "musl",
        target_abi = "eabihf"
    ),
    all(
        target_arch = "x86",
        target_vendor = "unknown",
        target_os = "linux",
        target_env = "musl"
    ),
    all(
        target_arch = "x86_64",
        target_vendor = "unknown",
        target_os = "linux",
        any(target_env = "gnu", target_env = "musl")
    ),
)))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    meshc::run()
}
