//! Fuzz target: any bytes evaluated as a program (parse, compile, evaluate, print)
//! under the fuzzing limits must end in a value or diagnostics, never a panic, a
//! stack overflow or a hang.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    lang_fuzz::eval(data);
});
