//! Coercion to strings (Nix's `coerceToString`): interpolation, `toString` and
//! `+` write into one buffer the caller owns, never copying a string twice.

use super::*;
use crate::codes;
use crate::span::Span;

use crate::value::{EvalResult, Value};

impl Machine {
    /// Nix's `coerceToString`. `more` also turns numbers, Booleans, null and lists
    /// into text (`toString`); `to_store` is where Nix would copy a path into the
    /// store, which the mesh language refuses.
    /// `toString` of a list: its elements, separated by spaces. What each element
    /// that is no list writes counts against the memory bound (a list written out
    /// again and again, shared, grows without end).
    pub(super) fn coerce_list_into(
        &mut self,
        items: &[Value],
        span: Span,
        to_store: bool,
        out: &mut Vec<u8>,
    ) -> EvalResult<()> {
        let count = items.len();
        for (index, item) in items.iter().enumerate() {
            let before = out.len();
            self.coerce_to_string_into(item, span, true, to_store, out)?;
            let item = self.force(item, span)?;
            let is_list = matches!(&item, Value::List(_));
            if !is_list {
                self.make_string(out.len() - before + 1, span)?;
            }
            if index + 1 < count {
                let empty_list = matches!(&item, Value::List(list) if list.is_empty());
                if !empty_list {
                    out.push(b' ');
                }
            }
        }
        Ok(())
    }

    pub fn coerce_to_string_into(
        &mut self,
        value: &Value,
        span: Span,
        more: bool,
        to_store: bool,
        out: &mut Vec<u8>,
    ) -> EvalResult<()> {
        let value = self.force(value, span)?;
        match &value {
            Value::String(bytes) => {
                out.extend_from_slice(bytes);
                Ok(())
            }
            Value::Path(path) => {
                if to_store {
                    let text = String::from_utf8_lossy(path);
                    return Err(error(
                        codes::PATH_IN_STRING,
                        format!("path `{text}` interpolated into a string"),
                        span,
                        "Nix would copy this path into the store here",
                        "there is no store in mesh; use `toString path` for the path's text, or `builtins.readFile path` for its content",
                    ));
                }
                out.extend_from_slice(path);
                Ok(())
            }
            Value::Attrs(attrs) => {
                // what `__toString` gives, or `outPath`, is coerced in turn: a step
                // deeper each time, so that a set that gives itself (`__toString =
                // s: s`) ends at the depth bound instead of overflowing the stack
                if let Some(to_string) = attrs.get(b"__toString").cloned() {
                    self.enter(span)?;
                    let result = self
                        .call(to_string, value.clone(), span)
                        .and_then(|result| {
                            self.coerce_to_string_into(&result, span, more, to_store, out)
                        });
                    self.leave();
                    return result;
                }
                if let Some(out_path) = attrs.get(b"outPath").cloned() {
                    self.enter(span)?;
                    let result = self.coerce_to_string_into(&out_path, span, more, to_store, out);
                    self.leave();
                    return result;
                }
                Err(error(
                    codes::NOT_COERCIBLE,
                    "cannot turn a set into a string",
                    span,
                    "this is a set",
                    "select the attribute you mean, or give the set a `__toString` function",
                ))
            }
            Value::Opaque(_) => Err(opaque_interpolated(span)),
            Value::Bool(true) if more => {
                out.push(b'1');
                Ok(())
            }
            Value::Bool(false) | Value::Null if more => Ok(()),
            Value::Int(number) if more => {
                push_decimal(out, *number);
                Ok(())
            }
            Value::Float(number) if more => {
                out.extend_from_slice(crate::print::format_fixed(*number).as_bytes());
                Ok(())
            }
            Value::List(items) if more => {
                self.enter(span)?;
                let result = self.coerce_list_into(items, span, to_store, out);
                self.leave();
                result
            }
            other => {
                let help = match other {
                    Value::Int(_)
                    | Value::Float(_)
                    | Value::Bool(_)
                    | Value::Null
                    | Value::List(_) => "convert it explicitly with `toString`",
                    _ => {
                        "only strings, paths and sets with `__toString` or `outPath` become strings"
                    }
                };
                Err(error(
                    codes::NOT_COERCIBLE,
                    format!("cannot turn {} into a string", other.describe_type()),
                    span,
                    &format!("this is {}", other.describe_type()),
                    help,
                ))
            }
        }
    }

    pub fn coerce_to_string(
        &mut self,
        value: &Value,
        span: Span,
        more: bool,
        to_store: bool,
    ) -> EvalResult<Vec<u8>> {
        let mut out = Vec::new();
        self.coerce_to_string_into(value, span, more, to_store, &mut out)?;
        Ok(out)
    }

    /// An empty buffer to build a string in, to hand to [`Machine::finish_string`]
    /// (a string built while another is, by a nested interpolation, gets a fresh one).
    #[inline]
    pub(crate) fn string_buffer(&mut self) -> Vec<u8> {
        let mut buffer = std::mem::take(&mut self.string_buffer);
        buffer.clear();
        buffer
    }

    /// The string built in `buffer`, copied once into its own allocation; the
    /// buffer is kept for the next string unless it grew past [`KEPT_BUFFER`].
    /// A buffer past it that the string nearly fills becomes the string itself
    /// (shrunk in place): a large string is not held twice while it is copied.
    /// One with more room than an eighth is copied, so that no string keeps a block
    /// much larger than it (a buffer grown by doubling may be half empty).
    #[inline]
    pub(crate) fn finish_string(&mut self, buffer: Vec<u8>) -> Value {
        let room = buffer.capacity() - buffer.len();
        if buffer.capacity() > KEPT_BUFFER && room <= buffer.capacity() / 8 {
            return Value::String(Bytes::from(buffer));
        }
        let string = Value::String(Bytes::from(&buffer[..]));
        if buffer.capacity() <= KEPT_BUFFER && buffer.capacity() > self.string_buffer.capacity() {
            self.string_buffer = buffer;
        }
        string
    }
}

/// The largest string buffer a machine keeps between strings (bytes).
const KEPT_BUFFER: usize = 1 << 16;

/// Writes `number` in decimal, as `i64`'s `Display` does, without making a `String`
/// first (`toString` of an integer in a loop is the common case): two digits at a
/// time (`itoa`), a tenth of the instructions of one division per digit.
pub(crate) fn push_decimal(out: &mut Vec<u8>, number: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(number).as_bytes());
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// `toString` of an integer is its `Display` text, sign and all.
        #[test]
        fn push_decimal_is_display(number in any::<i64>()) {
            let mut out = b"x".to_vec();
            super::push_decimal(&mut out, number);
            prop_assert_eq!(out, format!("x{number}").into_bytes());
        }
    }

    #[test]
    fn push_decimal_of_the_extremes() {
        for number in [0, -1, 9, 10, i64::MIN, i64::MAX] {
            let mut out = Vec::new();
            super::push_decimal(&mut out, number);
            assert_eq!(out, number.to_string().into_bytes());
        }
    }
}
