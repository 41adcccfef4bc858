//! The `meshc` binary: chooses the allocator and its setting, and runs the command
//! line (`meshc::run`). Must hold nothing else: commands live in `commands/`.
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
    survive_file_size_limit();
    let cli = meshc::parse();
    if cli.command.keeps_freed_memory() {
        keep_freed_memory();
    }
    meshc::run(cli)
}

/// For the commands that evaluate at length ([`meshc::cli::Command::keeps_freed_memory`]):
/// mimalloc hands pages whose objects were all freed back to the system 10 ms
/// later: an evaluation that frees and reuses memory (every module system does)
/// then has the kernel zero the same pages again and again (nixpkgs'
/// `lib.evalModules` over 2,000 modules: 0.57 s with 0.22 s of it in the kernel;
/// 0.41 s and 0.08 s when freed memory is kept, peak memory the same). mimalloc
/// reads its options from the environment once, before `main`, and setting one
/// through its C API would take `unsafe`: so the process runs itself again, once,
/// with `MIMALLOC_PURGE_DELAY=-1` (freed memory is kept for reuse, as Nix's
/// collector keeps it). A value the user set is left as it is; if the program
/// cannot be run again, it goes on as it is. (mimalloc is built without
/// transparent huge pages, `no_thp` in Cargo.toml: see the book's design decisions.)
fn keep_freed_memory() {
    use std::os::unix::process::CommandExt;
    if std::env::var_os(PURGE_DELAY).is_some() {
        return;
    }
    let Ok(program) = std::env::current_exe() else {
        return;
    };
    let mut arguments = std::env::args_os();
    let name = arguments
        .next()
        .unwrap_or_else(|| program.clone().into_os_string());
    // `exec` returns only when the program could not be run again
    let _cannot_run_again = std::process::Command::new(&program)
        .arg0(name)
        .args(arguments)
        .env(PURGE_DELAY, "-1")
        .exec();
}

/// A write past the file size limit (`ulimit -f`, `LimitFSIZE=`) raises SIGXFSZ,
/// whose default action ends the process at once: a build then stops in the
/// middle of writing its output, with no diagnostic and a temporary file left.
/// With a handler installed (it only sets a flag nobody reads) the write fails
/// with `EFBIG` instead, and the command reports it as it reports any failed
/// write (E407 for a build's output, E317 for `mesh.lock`). A child process
/// (`age`, `ssh`) starts with the default action again.
fn survive_file_size_limit() {
    let raised = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // if it cannot be installed the default stays, as before
    let _ = signal_hook::flag::register(signal_hook::consts::SIGXFSZ, raised);
}

const PURGE_DELAY: &str = "MIMALLOC_PURGE_DELAY";
