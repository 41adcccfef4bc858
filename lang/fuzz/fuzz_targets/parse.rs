//! Fuzz target: any bytes given to the parser must come back as a tree and errors,
//! never a panic, a stack overflow or a hang.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    lang_fuzz::parse(data);
});
