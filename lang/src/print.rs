//! Printing values exactly as `nix-instantiate --eval --strict [--json]` prints them:
//! C++ stream formatting of floats, Nix's string escaping and identifier quoting,
//! and `«repeated»` for a set or list already printed.

use std::collections::HashSet;
use std::io::Write;

use crate::codes;
use crate::diagnostic::Diagnostic;
use crate::eval::{Machine, error, opaque_error};
use crate::span::Span;
use crate::value::{EvalResult, Value};

/// `std::ostream << double` with the default precision of 6 (`%g`).
pub fn format_float(number: f64) -> String {
    if number.is_nan() {
        return if number.is_sign_negative() {
            "-nan"
        } else {
            "nan"
        }
        .to_string();
    }
    if number.is_infinite() {
        return if number < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    if number == 0.0 {
        return if number.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    const PRECISION: i32 = 6;
    let scientific = format!("{:.*e}", (PRECISION - 1) as usize, number);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..PRECISION).contains(&exponent) {
        let mantissa = strip_fraction_zeros(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        let decimals = (PRECISION - 1 - exponent).max(0) as usize;
        strip_fraction_zeros(&format!("{number:.decimals$}")).to_string()
    }
}

fn strip_fraction_zeros(text: &str) -> &str {
    if !text.contains('.') {
        return text;
    }
    text.trim_end_matches('0').trim_end_matches('.')
}

/// `std::to_string(double)`, which is `%f`: what `toString 1.5` gives ("1.500000").
pub fn format_fixed(number: f64) -> String {
    if number.is_nan() {
        return if number.is_sign_negative() {
            "-nan"
        } else {
            "nan"
        }
        .to_string();
    }
    if number.is_infinite() {
        return if number < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    format!("{number:.6}")
}

/// A string literal as Nix prints it.
pub fn quote_string(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for (index, byte) in bytes.iter().enumerate() {
        match byte {
            b'"' | b'\\' => {
                out.push(b'\\');
                out.push(*byte);
            }
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'$' if bytes.get(index + 1) == Some(&b'{') => out.extend_from_slice(b"\\$"),
            other => out.push(*other),
        }
    }
    out.push(b'"');
}

/// An attribute name as Nix prints it: bare if it is an identifier, quoted if not
/// (and `if`, which Nix special-cases).
pub fn attribute_name(name: &[u8], out: &mut Vec<u8>) {
    let identifier = match name.first() {
        Some(first) => {
            (first.is_ascii_alphabetic() || *first == b'_')
                && name
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'\'' | b'-'))
        }
        None => false,
    };
    if identifier && name != b"if" {
        out.extend_from_slice(name);
    } else {
        // Nix 2.8 escapes every `$` in a quoted attribute name, not only `${`
        out.push(b'"');
        for byte in name {
            match byte {
                b'"' | b'\\' | b'$' => {
                    out.push(b'\\');
                    out.push(*byte);
                }
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b'\t' => out.extend_from_slice(b"\\t"),
                other => out.push(*other),
            }
        }
        out.push(b'"');
    }
}

/// Why [`Machine::print_strict_to`] stopped before the end of the value.
#[derive(Debug)]
pub enum PrintFailure {
    /// Evaluation failed while printing (the step budget, a value with no printed
    /// form); what was printed before stays printed, as in Nix.
    Eval(Box<Diagnostic>),
    /// The sink refused the text (a closed pipe, a full disk).
    Write(std::io::Error),
}

impl From<Box<Diagnostic>> for PrintFailure {
    fn from(diagnostic: Box<Diagnostic>) -> PrintFailure {
        PrintFailure::Eval(diagnostic)
    }
}

/// How much printed text [`Machine::print_strict_to`] holds before handing it on.
const PRINT_CHUNK: usize = 64 << 10;

/// What the printer has written and not yet handed on, and the sets and lists
/// printed so far.
struct Printed<'sink> {
    out: Vec<u8>,
    /// The addresses of the sets and lists printed, each later one `«repeated»`.
    seen: HashSet<usize>,
    /// How much of `out` has been counted against the memory bound and the step
    /// budget: text kept whole is made as any string is (a string shared by every
    /// element of a long list is written out again for each), as `toJSON`'s is.
    counted: usize,
    /// Where the text goes, a chunk at a time, so that it is never held whole;
    /// `None` keeps it all in `out`.
    sink: Option<&'sink mut dyn Write>,
}

impl<'sink> Printed<'sink> {
    fn new(sink: Option<&'sink mut dyn Write>) -> Printed<'sink> {
        Printed {
            out: Vec::new(),
            seen: HashSet::new(),
            counted: 0,
            sink,
        }
    }

    /// Counts what was written since the last count: against the memory bound and
    /// the step budget when the text is kept, against the budget only when it is
    /// handed on (a chunk at a time, once `at_least` bytes are waiting).
    fn count(&mut self, machine: &mut Machine, at_least: usize) -> Result<(), PrintFailure> {
        match &mut self.sink {
            None => {
                let written = self.out.len() - self.counted;
                self.counted = self.out.len();
                machine.make_string(written, Span::default())?;
            }
            Some(sink) => {
                if self.out.len() >= at_least.max(1) {
                    let written = self.out.len();
                    sink.write_all(&self.out).map_err(PrintFailure::Write)?;
                    self.out.clear();
                    machine.write_string(written, Span::default())?;
                }
            }
        }
        Ok(())
    }
}

impl Machine {
    /// `nix-instantiate --eval --strict`: force everything, then print.
    pub fn print_strict(&mut self, value: &Value) -> EvalResult<Vec<u8>> {
        let value = self.force_deep(value, Span::default())?;
        let mut printed = Printed::new(None);
        let result = self
            .print_value(&value, &mut printed)
            .and_then(|()| printed.count(self, 0));
        match result {
            Ok(()) => Ok(printed.out),
            Err(PrintFailure::Eval(diagnostic)) => Err(diagnostic),
            // with no sink, nothing is written anywhere
            Err(PrintFailure::Write(write_error)) => Err(Box::new(Diagnostic::bug(format!(
                "printing failed: {write_error}"
            )))),
        }
    }

    /// [`Machine::print_strict`] of a value already forced deeply (by
    /// [`Machine::force_deep`], so that its traces can be shown first), written to
    /// `sink` as it is printed, a chunk at a time, as Nix streams it: memory stays
    /// bounded however long the text, so it counts against the step budget only.
    pub fn print_strict_to(
        &mut self,
        value: &Value,
        sink: &mut dyn Write,
    ) -> Result<(), PrintFailure> {
        let mut printed = Printed::new(Some(sink));
        let result = self.print_value(value, &mut printed);
        if let Err(PrintFailure::Write(_)) = result {
            return result;
        }
        // what was printed before an evaluation error is handed on too
        let flushed = printed.count(self, 0);
        result.and(flushed)
    }

    fn print_value(&mut self, value: &Value, printed: &mut Printed) -> Result<(), PrintFailure> {
        printed.count(self, PRINT_CHUNK)?;
        match value {
            Value::Null => printed.out.extend_from_slice(b"null"),
            Value::Bool(true) => printed.out.extend_from_slice(b"true"),
            Value::Bool(false) => printed.out.extend_from_slice(b"false"),
            Value::Int(number) => crate::eval::push_decimal(&mut printed.out, *number),
            Value::Float(number) => printed
                .out
                .extend_from_slice(format_float(*number).as_bytes()),
            Value::String(bytes) => quote_string(bytes, &mut printed.out),
            Value::Path(bytes) => printed.out.extend_from_slice(bytes),
            Value::Attrs(attrs) => {
                if !attrs.is_empty() && !printed.seen.insert(attrs.address()) {
                    printed.out.extend_from_slice("«repeated»".as_bytes());
                    return Ok(());
                }
                self.enter(Span::default())?;
                printed.out.extend_from_slice(b"{ ");
                for attr in attrs.iter() {
                    attribute_name(&attr.name, &mut printed.out);
                    printed.out.extend_from_slice(b" = ");
                    let forced = self.force(&attr.value, Span::default())?;
                    self.print_value(&forced, printed)?;
                    printed.out.extend_from_slice(b"; ");
                }
                printed.out.push(b'}');
                self.leave();
            }
            Value::List(items) => {
                if !items.is_empty() && !printed.seen.insert(items.address()) {
                    printed.out.extend_from_slice("«repeated»".as_bytes());
                    return Ok(());
                }
                self.enter(Span::default())?;
                printed.out.extend_from_slice(b"[ ");
                for item in items.iter() {
                    let forced = self.force(item, Span::default())?;
                    self.print_value(&forced, printed)?;
                    printed.out.push(b' ');
                }
                printed.out.push(b']');
                self.leave();
            }
            Value::Lambda(_) => printed.out.extend_from_slice(b"<LAMBDA>"),
            Value::PrimOp(_) => printed.out.extend_from_slice(b"<PRIMOP>"),
            Value::PrimOpApp(_) => printed.out.extend_from_slice(b"<PRIMOP-APP>"),
            Value::Thunk(_) => printed.out.extend_from_slice(b"<CODE>"),
            Value::Opaque(_) => return Err(opaque_error(Span::default()).into()),
        }
        Ok(())
    }

    /// `builtins.toJSON` and `--json`: strict, sets sorted by name, no spaces.
    pub fn to_json(&mut self, value: &Value, span: Span) -> EvalResult<Vec<u8>> {
        let mut out = Vec::new();
        self.json_value(value, span, &mut out)?;
        Ok(out)
    }

    fn json_value(&mut self, value: &Value, span: Span, out: &mut Vec<u8>) -> EvalResult<()> {
        let value = self.force(value, span)?;
        // what this value writes itself (not its elements) counts against the memory
        // bound: a shared list written out again and again grows without end
        let before = out.len();
        // room for what the value writes itself, but for a set's names and text
        // (each given room as it is written): a number's digits, a string escaped,
        // the brackets and commas of a list
        let own = match &value {
            Value::String(bytes) => json_string_length(bytes),
            Value::List(items) => items.len(),
            _ => 0,
        };
        self.room(out, own.saturating_add(JSON_HEADROOM), span)?;
        self.json_own_value(&value, span, out)?;
        let written = match &value {
            Value::String(bytes) => bytes.len() + 2,
            Value::Attrs(attrs) => attrs.iter().map(|attr| attr.name.len() + 4).sum::<usize>() + 2,
            Value::List(items) => items.len() + 2,
            _ => out.len().saturating_sub(before),
        };
        self.make_string(written, span)
    }

    fn json_own_value(&mut self, value: &Value, span: Span, out: &mut Vec<u8>) -> EvalResult<()> {
        let value = value.clone();
        match &value {
            Value::Null => out.extend_from_slice(b"null"),
            Value::Bool(true) => out.extend_from_slice(b"true"),
            Value::Bool(false) => out.extend_from_slice(b"false"),
            Value::Int(number) => crate::eval::push_decimal(out, *number),
            Value::Float(number) => out.extend_from_slice(format_float(*number).as_bytes()),
            Value::String(bytes) => json_string(bytes, out),
            Value::Path(path) => {
                let text = String::from_utf8_lossy(path);
                return Err(error(
                    codes::PATH_IN_STRING,
                    format!("path `{text}` converted to JSON"),
                    span,
                    "Nix would copy this path into the store here",
                    "there is no store in mesh; use `toString path` to put the path's text in JSON",
                ));
            }
            Value::Attrs(attrs) => {
                if attrs.contains(b"__toString") {
                    // its text is written, and counted, as a string's is
                    let text = self.coerce_to_string(&value, span, false, false)?;
                    self.room(out, json_string_length(&text), span)?;
                    json_string(&text, out);
                    return self.make_string(text.len(), span);
                }
                if let Some(out_path) = attrs.get(b"outPath").cloned() {
                    // a step deeper: a set whose `outPath` is itself ends at the
                    // depth bound
                    self.enter(span)?;
                    let result = self.json_value(&out_path, span, out);
                    self.leave();
                    return result;
                }
                self.enter(span)?;
                out.push(b'{');
                for (index, attr) in attrs.iter().enumerate() {
                    self.room(
                        out,
                        json_string_length(&attr.name).saturating_add(JSON_HEADROOM),
                        span,
                    )?;
                    if index > 0 {
                        out.push(b',');
                    }
                    json_string(&attr.name, out);
                    out.push(b':');
                    self.json_value(&attr.value, attr.span.unwrap_or(span), out)?;
                }
                self.room(out, JSON_HEADROOM, span)?;
                out.push(b'}');
                self.leave();
            }
            Value::List(items) => {
                self.enter(span)?;
                out.push(b'[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(b',');
                    }
                    self.json_value(item, span, out)?;
                }
                self.room(out, JSON_HEADROOM, span)?;
                out.push(b']');
                self.leave();
            }
            Value::Opaque(_) => return Err(opaque_error(span)),
            other => {
                return Err(error(
                    codes::INVALID_JSON,
                    format!("cannot convert {} to JSON", other.describe_type()),
                    span,
                    "this value has no JSON form",
                    "only null, Booleans, numbers, strings, lists and sets convert to JSON",
                ));
            }
        }
        Ok(())
    }
}

/// Room asked for beside what a JSON value writes of its own: more than a number's
/// digits, brackets, a comma and a colon take.
const JSON_HEADROOM: usize = 64;

/// The length of [`json_string`]'s writing of `bytes`, quotes included.
fn json_string_length(bytes: &[u8]) -> usize {
    let escapes: usize = bytes
        .iter()
        .map(|byte| match byte {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' => 1,
            0..=0x1f => 5,
            _ => 0,
        })
        .sum();
    bytes.len().saturating_add(escapes).saturating_add(2)
}

/// Nix 2.8's JSON string escaping: `"`, `\`, `\n`, `\r`, `\t`, other control
/// characters as `\u00XX`, everything else as is.
pub fn json_string(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for byte in bytes {
        match byte {
            b'"' | b'\\' => {
                out.push(b'\\');
                out.push(*byte);
            }
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..=0x1f => out.extend_from_slice(format!("\\u{:04x}", byte).as_bytes()),
            other => out.push(*other),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The room asked for a string is what its writing takes, no more (six times
    /// its length refused a 268 MB string that fitted).
    #[test]
    fn a_json_strings_length_is_what_its_writing_takes() {
        for text in [
            &b""[..],
            b"plain",
            b"\"q\" \\ \n\r\t",
            b"\x00\x01\x1f",
            "\u{e9}\u{202e}".as_bytes(),
        ] {
            let mut out = Vec::new();
            json_string(text, &mut out);
            assert_eq!(json_string_length(text), out.len(), "{text:?}");
        }
    }

    #[test]
    fn floats_print_like_cpp_streams() {
        let cases = [
            (0.1, "0.1"),
            (1.0 / 3.0, "0.333333"),
            (1e20, "1e+20"),
            (100000.0, "100000"),
            (1000000.0, "1e+06"),
            (1.5, "1.5"),
            (123456789.0, "1.23457e+08"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (-0.0, "-0"),
        ];
        for (number, expected) in cases {
            assert_eq!(format_float(number), expected, "{number}");
        }
        assert_eq!(format_fixed(1.5), "1.500000");
    }

    #[test]
    fn attribute_names_are_quoted_when_not_identifiers() {
        let mut out = Vec::new();
        for name in [&b"a-b'"[..], b"1x", b"if", b"then", b""] {
            attribute_name(name, &mut out);
            out.push(b' ');
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a-b' \"1x\" \"if\" then \"\" "
        );
    }
}
