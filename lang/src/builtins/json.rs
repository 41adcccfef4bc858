//! `toJSON` and `fromJSON`.

use super::Builtin;
use crate::codes;
use crate::eval::{Machine, error};
use crate::span::Span;
use crate::value::{Attr, Attrs, EvalResult, Value};

pub(super) fn builtins() -> Vec<Builtin> {
    vec![
        Builtin {
            name: "toJSON",
            arity: 1,
            function: to_json,
        },
        Builtin {
            name: "fromJSON",
            arity: 1,
            function: from_json,
        },
    ]
}

fn to_json(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let json = machine.to_json(&arguments[0], span)?;
    Ok(Value::String(crate::value::Bytes::from(json)))
}

fn from_json(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let text = machine.force_string(&arguments[0], span, "`fromJSON`")?;
    let mut parser = JsonParser {
        text: &text,
        position: 0,
        span,
    };
    // like nlohmann's parser, which Nix uses: a UTF-8 byte order mark is skipped
    if text.starts_with(b"\xef\xbb\xbf") {
        parser.position = 3;
    }
    let value = parser.value(machine)?;
    parser.skip_whitespace();
    if parser.position < text.len() {
        return Err(parser.error("unexpected text after the JSON value"));
    }
    Ok(value)
}

/// A JSON reader with the number rules of nlohmann's parser, which Nix uses: an
/// integer without fraction or exponent is an integer (`-0` is 0), one outside the
/// 64-bit range a float, except a positive one below 2^64, which Nix 2.8 wraps and
/// later Nix (and mesh) refuses; the last of duplicate keys wins; a `\u0000` does not
/// cut the string short (Nix 2.8 cut it).
struct JsonParser<'a> {
    text: &'a [u8],
    position: usize,
    span: Span,
}

impl JsonParser<'_> {
    fn error(&self, what: &str) -> Box<crate::diagnostic::Diagnostic> {
        error(
            codes::INVALID_JSON,
            format!("invalid JSON at byte {}: {what}", self.position),
            self.span,
            "parsed here",
            "check the JSON text; `builtins.toJSON` produces valid JSON",
        )
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.position).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.position += 1;
        }
    }

    fn literal(&mut self, word: &[u8], value: Value) -> EvalResult<Value> {
        if self.text[self.position..].starts_with(word) {
            self.position += word.len();
            Ok(value)
        } else {
            Err(self.error("invalid literal"))
        }
    }

    fn value(&mut self, machine: &mut Machine) -> EvalResult<Value> {
        self.skip_whitespace();
        match self.peek() {
            None => Err(self.error("unexpected end of input")),
            Some(b'n') => self.literal(b"null", Value::Null),
            Some(b't') => self.literal(b"true", Value::Bool(true)),
            Some(b'f') => self.literal(b"false", Value::Bool(false)),
            Some(b'"') => Ok(Value::String(crate::value::Bytes::from(self.string()?))),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'[') => {
                self.position += 1;
                machine.enter(self.span)?;
                let result = self.array(machine);
                machine.leave();
                result
            }
            Some(b'{') => {
                self.position += 1;
                machine.enter(self.span)?;
                let result = self.object(machine);
                machine.leave();
                result
            }
            Some(_) => Err(self.error("invalid literal")),
        }
    }

    fn array(&mut self, machine: &mut Machine) -> EvalResult<Value> {
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.position += 1;
            return Ok(Value::List(crate::value::List::from(items)));
        }
        loop {
            items.push(self.value(machine)?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.position += 1,
                Some(b']') => {
                    self.position += 1;
                    return Ok(Value::List(crate::value::List::from(items)));
                }
                _ => return Err(self.error("expected `,` or `]`")),
            }
        }
    }

    fn object(&mut self, machine: &mut Machine) -> EvalResult<Value> {
        let mut entries: Vec<Attr> = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.position += 1;
            return Ok(Value::Attrs(Attrs::new()));
        }
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a string as the key"));
            }
            let name = self.string()?;
            self.skip_whitespace();
            if self.peek() != Some(b':') {
                return Err(self.error("expected `:`"));
            }
            self.position += 1;
            let value = self.value(machine)?;
            entries.push(Attr {
                name: crate::name::Name::new(&name),
                value,
                span: None,
            });
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.position += 1,
                Some(b'}') => {
                    self.position += 1;
                    // the last of duplicate keys wins: the first once reversed
                    entries.reverse();
                    return Ok(Value::Attrs(Attrs::from_unsorted(entries)));
                }
                _ => return Err(self.error("expected `,` or `}`")),
            }
        }
    }

    fn hex4(&mut self) -> EvalResult<u32> {
        let digits = self
            .text
            .get(self.position..self.position + 4)
            .ok_or_else(|| self.error("`\\u` must be followed by four hex digits"))?;
        let text = std::str::from_utf8(digits).unwrap_or("");
        let value = u32::from_str_radix(text, 16)
            .ok()
            .filter(|_| text.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.error("`\\u` must be followed by four hex digits"))?;
        self.position += 4;
        Ok(value)
    }

    fn string(&mut self) -> EvalResult<Vec<u8>> {
        self.position += 1;
        let mut out = Vec::new();
        loop {
            let Some(byte) = self.peek() else {
                return Err(self.error("unterminated string"));
            };
            match byte {
                b'"' => {
                    self.position += 1;
                    break;
                }
                b'\\' => {
                    self.position += 1;
                    let escaped = self.peek();
                    self.position += 1;
                    match escaped {
                        Some(b'"') => out.push(b'"'),
                        Some(b'\\') => out.push(b'\\'),
                        Some(b'/') => out.push(b'/'),
                        Some(b'b') => out.push(8),
                        Some(b'f') => out.push(12),
                        Some(b'n') => out.push(b'\n'),
                        Some(b'r') => out.push(b'\r'),
                        Some(b't') => out.push(b'\t'),
                        Some(b'u') => {
                            let first = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&first) {
                                if !self.text[self.position..].starts_with(b"\\u") {
                                    return Err(self.error(
                                        "a high surrogate must be followed by a low surrogate",
                                    ));
                                }
                                self.position += 2;
                                let second = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&second) {
                                    return Err(self.error(
                                        "a high surrogate must be followed by a low surrogate",
                                    ));
                                }
                                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                            } else if (0xDC00..0xE000).contains(&first) {
                                return Err(self.error("a low surrogate without a high one"));
                            } else {
                                first
                            };
                            let character = char::from_u32(code)
                                .ok_or_else(|| self.error("invalid code point"))?;
                            let mut buffer = [0; 4];
                            out.extend_from_slice(character.encode_utf8(&mut buffer).as_bytes());
                        }
                        _ => return Err(self.error("invalid escape after `\\`")),
                    }
                }
                0..=0x1f => return Err(self.error("control characters must be escaped")),
                _ => {
                    // one UTF-8 sequence, validated
                    let length = match byte {
                        0x00..=0x7f => 1,
                        0xc2..=0xdf => 2,
                        0xe0..=0xef => 3,
                        0xf0..=0xf4 => 4,
                        _ => return Err(self.error("ill-formed UTF-8")),
                    };
                    let sequence = self
                        .text
                        .get(self.position..self.position + length)
                        .ok_or_else(|| self.error("ill-formed UTF-8"))?;
                    if std::str::from_utf8(sequence).is_err() {
                        return Err(self.error("ill-formed UTF-8"));
                    }
                    out.extend_from_slice(sequence);
                    self.position += length;
                }
            }
        }
        Ok(out)
    }

    fn number(&mut self) -> EvalResult<Value> {
        let start = self.position;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.position += 1;
        }
        let digits = |parser: &mut Self| {
            let begin = parser.position;
            while matches!(parser.peek(), Some(b'0'..=b'9')) {
                parser.position += 1;
            }
            parser.position - begin
        };
        match self.peek() {
            Some(b'0') => self.position += 1,
            Some(b'1'..=b'9') => {
                digits(self);
            }
            _ => return Err(self.error("expected a digit")),
        }
        let mut integer = true;
        if self.peek() == Some(b'.') {
            self.position += 1;
            integer = false;
            if digits(self) == 0 {
                return Err(self.error("expected a digit after `.`"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.position += 1;
            integer = false;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.position += 1;
            }
            if digits(self) == 0 {
                return Err(self.error("expected a digit in the exponent"));
            }
        }
        let text = std::str::from_utf8(&self.text[start..self.position]).unwrap_or("0");
        if integer {
            if let Ok(number) = text.parse::<i64>() {
                return Ok(Value::Int(number));
            }
            if !negative && text.parse::<u64>().is_ok() {
                return Err(error(
                    codes::INVALID_JSON,
                    format!("JSON number {text} is outside the integer range"),
                    self.span,
                    "parsed here",
                    "integers are 64-bit signed; Nix 2.8 wraps this number around, later Nix and mesh refuse it",
                ));
            }
        }
        let number: f64 = text.parse().unwrap_or(f64::INFINITY);
        if number.is_infinite() {
            return Err(self.error(&format!("number {text} overflows a float")));
        }
        Ok(Value::Float(number))
    }
}
