//! `toXML` and `fromTOML`, as Nix 2.8 writes and reads them: `toXML` is Nix's own
//! indented XML form of a value (forced deeply), `fromTOML` maps a TOML document to
//! sets, lists and scalars and refuses dates and times, which have no Nix value.

use super::Builtin;
use crate::codes;
use crate::compile::ParamIr;
use crate::eval::{Machine, error, opaque_error};
use crate::span::Span;
use crate::value::{Attr, Attrs, EvalResult, Value};

pub(super) fn builtins() -> Vec<Builtin> {
    vec![
        Builtin {
            name: "toXML",
            arity: 1,
            function: to_xml,
        },
        Builtin {
            name: "fromTOML",
            arity: 1,
            function: from_toml,
        },
    ]
}

// ---- toXML --------------------------------------------------------------------

/// Nix's `XMLWriter`: two spaces per level, attributes sorted by name.
///
/// Invariant: what it holds is written once into the string it makes, so it never
/// writes more than half of what the memory bound left when it began (the output,
/// then its copy), and its chunks hold no room beyond the last one's. It writes into chunks, not one buffer grown by doubling: each
/// growth copied the buffer into one twice its size, and the allocator keeps what
/// is freed (`meshc eval`), so a deep value's output took three times the bound.
struct XmlWriter {
    /// The chunk being written, and those written before it.
    out: Vec<u8>,
    full: Vec<Vec<u8>>,
    /// Bytes written, in `full` and `out`.
    written: usize,
    open: Vec<&'static str>,
    /// How much of the output has been counted against the memory bound and the
    /// step budget (the bytes of a list shared at every level, written out again and
    /// again, or of deep indentation, grow without end as `toJSON`'s do).
    counted: usize,
    /// The size of a write the allocator could not make room for: nothing is
    /// written after it, and the next count is E046. A failed growth is an error,
    /// not the process's abort.
    failed: Option<usize>,
    /// Whether `failed` is a write past `room` (E046 of the memory bound).
    past_bound: bool,
    /// The most it may hold: half of what the memory bound left.
    room: usize,
}

/// The size of a chunk of the output (a write longer than that has one its size).
const XML_CHUNK: usize = 1 << 20;

impl XmlWriter {
    fn new(room: usize) -> XmlWriter {
        XmlWriter {
            out: Vec::new(),
            full: Vec::new(),
            written: 0,
            open: Vec::new(),
            counted: 0,
            failed: None,
            past_bound: false,
            room,
        }
    }

    /// Counts what was written since the last count, as `toJSON` counts its output.
    fn count(&mut self, machine: &mut Machine, span: Span) -> EvalResult<()> {
        if let Some(bytes) = self.failed {
            return Err(if self.past_bound {
                machine.beyond_memory_bound(bytes, span)
            } else {
                machine.out_of_memory(bytes, span)
            });
        }
        let written = self.written - self.counted;
        self.counted = self.written;
        machine.make_string(written, span)
    }

    /// Whether `bytes` more fit (else the write fails, and the next count says so).
    fn fits(&mut self, bytes: usize) -> bool {
        if self.failed.is_some() {
            return false;
        }
        if self.written.saturating_add(bytes) > self.room {
            self.failed = Some(bytes);
            self.past_bound = true;
            return false;
        }
        true
    }

    /// Appends `bytes`, or notes that there was no room for them. A chunk is filled
    /// before the next is begun, so chunks hold no more than is written in them;
    /// the first is small (most outputs are), each next one twice the last, up to
    /// [`XML_CHUNK`].
    fn put(&mut self, bytes: &[u8]) {
        if !self.fits(bytes.len()) {
            return;
        }
        let mut rest = bytes;
        loop {
            let room = self.out.capacity() - self.out.len();
            let (now, later) = rest.split_at(rest.len().min(room));
            self.out.extend_from_slice(now);
            self.written += now.len();
            if later.is_empty() {
                return;
            }
            rest = later;
            let size = self.out.capacity().saturating_mul(2).clamp(256, XML_CHUNK);
            let mut chunk = Vec::new();
            if chunk.try_reserve_exact(size).is_err() {
                self.failed = Some(rest.len());
                return;
            }
            let done = std::mem::replace(&mut self.out, chunk);
            if !done.is_empty() {
                self.full.push(done);
            }
        }
    }

    /// The output as one string, or E046 if there is no room for it.
    fn finish(mut self, machine: &Machine, span: Span) -> EvalResult<Vec<u8>> {
        if self.full.is_empty() {
            return Ok(self.out);
        }
        let mut whole = Vec::new();
        if whole.try_reserve_exact(self.written).is_err() {
            return Err(machine.out_of_memory(self.written, span));
        }
        for chunk in self.full.drain(..) {
            whole.extend_from_slice(&chunk);
        }
        whole.extend_from_slice(&self.out);
        Ok(whole)
    }

    /// Two spaces per open element, written a run at a time (a value nested
    /// thousands deep indents every line by thousands).
    fn indent(&mut self) {
        const SPACES: &[u8; 256] = &[b' '; 256];
        let mut left = self.open.len().saturating_mul(2);
        while left > 0 {
            let run = left.min(SPACES.len());
            self.put(&SPACES[..run]);
            left -= run;
        }
    }

    fn attributes(&mut self, attributes: &[(&str, &[u8])]) {
        let mut sorted = attributes.to_vec();
        sorted.sort_by(|left, right| left.0.cmp(right.0));
        for (name, value) in sorted {
            self.put(b" ");
            self.put(name.as_bytes());
            self.put(b"=\"");
            // the value escaped into room asked for once, as long as the escaping
            // makes it (one `put` a byte asked for room a byte at a time)
            let length = value
                .iter()
                .map(|byte| match byte {
                    b'"' => 6,
                    b'<' | b'>' => 4,
                    b'&' | b'\n' => 5,
                    _ => 1,
                })
                .sum::<usize>();
            let mut escaped = Vec::new();
            if !self.fits(length) {
                return;
            }
            if escaped.try_reserve_exact(length).is_err() {
                self.failed = Some(length);
                return;
            }
            for byte in value {
                match byte {
                    b'"' => escaped.extend_from_slice(b"&quot;"),
                    b'<' => escaped.extend_from_slice(b"&lt;"),
                    b'>' => escaped.extend_from_slice(b"&gt;"),
                    b'&' => escaped.extend_from_slice(b"&amp;"),
                    b'\n' => escaped.extend_from_slice(b"&#xA;"),
                    other => escaped.push(*other),
                }
            }
            self.put(&escaped);
            self.put(b"\"");
        }
    }

    fn open(&mut self, name: &'static str, attributes: &[(&str, &[u8])]) {
        self.indent();
        self.put(b"<");
        self.put(name.as_bytes());
        self.attributes(attributes);
        self.put(b">\n");
        self.open.push(name);
    }

    fn close(&mut self) {
        let name = self.open.pop().unwrap_or("expr");
        self.indent();
        self.put(b"</");
        self.put(name.as_bytes());
        self.put(b">\n");
    }

    fn empty(&mut self, name: &str, attributes: &[(&str, &[u8])]) {
        self.indent();
        self.put(b"<");
        self.put(name.as_bytes());
        self.attributes(attributes);
        self.put(b" />\n");
    }
}

fn to_xml(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let mut writer = XmlWriter::new(machine.memory_left() / 2);
    writer.put(b"<?xml version='1.0' encoding='utf-8'?>\n");
    writer.open("expr", &[]);
    let mut derivations_seen = Vec::new();
    xml_value(
        machine,
        &arguments[0],
        span,
        &mut writer,
        &mut derivations_seen,
    )?;
    writer.close();
    writer.count(machine, span)?;
    let whole = writer.finish(machine, span)?;
    Ok(Value::String(crate::value::Bytes::from(whole)))
}

fn xml_attrs(
    machine: &mut Machine,
    attrs: &Attrs,
    span: Span,
    writer: &mut XmlWriter,
    derivations_seen: &mut Vec<Vec<u8>>,
) -> EvalResult<()> {
    for attr in attrs.iter() {
        writer.open("attr", &[("name", &attr.name)]);
        xml_value(
            machine,
            &attr.value,
            attr.span.unwrap_or(span),
            writer,
            derivations_seen,
        )?;
        writer.close();
    }
    Ok(())
}

fn xml_value(
    machine: &mut Machine,
    value: &Value,
    span: Span,
    writer: &mut XmlWriter,
    derivations_seen: &mut Vec<Vec<u8>>,
) -> EvalResult<()> {
    writer.count(machine, span)?;
    let value = machine.force(value, span)?;
    machine.enter(span)?;
    let result = xml_forced(machine, &value, span, writer, derivations_seen);
    machine.leave();
    result
}

fn xml_forced(
    machine: &mut Machine,
    value: &Value,
    span: Span,
    writer: &mut XmlWriter,
    derivations_seen: &mut Vec<Vec<u8>>,
) -> EvalResult<()> {
    match value {
        Value::Int(number) => writer.empty("int", &[("value", number.to_string().as_bytes())]),
        Value::Float(number) => writer.empty(
            "float",
            &[("value", crate::print::format_float(*number).as_bytes())],
        ),
        Value::Bool(boolean) => writer.empty(
            "bool",
            &[("value", if *boolean { b"true" } else { b"false" })],
        ),
        Value::Null => writer.empty("null", &[]),
        Value::String(bytes) => writer.empty("string", &[("value", bytes)]),
        Value::Path(bytes) => writer.empty("path", &[("value", bytes)]),
        Value::Attrs(attrs) => {
            let is_derivation = match attrs.get(b"type").cloned() {
                Some(kind) => {
                    matches!(machine.force(&kind, span)?, Value::String(s) if &*s == b"derivation")
                }
                None => false,
            };
            if !is_derivation {
                writer.open("attrs", &[]);
                xml_attrs(machine, attrs, span, writer, derivations_seen)?;
                writer.close();
                return Ok(());
            }
            let mut element_attributes: Vec<(&str, Vec<u8>)> = Vec::new();
            let mut derivation_path = Vec::new();
            for (name, key) in [("drvPath", &b"drvPath"[..]), ("outPath", b"outPath")] {
                if let Some(inner) = attrs.get(key).cloned()
                    && let Value::String(text) = machine.force(&inner, span)?
                {
                    if name == "drvPath" {
                        derivation_path = text.to_vec();
                    }
                    element_attributes.push((name, text.to_vec()));
                }
            }
            let borrowed: Vec<(&str, &[u8])> = element_attributes
                .iter()
                .map(|(name, text)| (*name, text.as_slice()))
                .collect();
            writer.open("derivation", &borrowed);
            if !derivation_path.is_empty() && !derivations_seen.contains(&derivation_path) {
                derivations_seen.push(derivation_path);
                xml_attrs(machine, attrs, span, writer, derivations_seen)?;
            } else {
                writer.empty("repeated", &[]);
            }
            writer.close();
        }
        Value::List(items) => {
            writer.open("list", &[]);
            for item in items.iter() {
                xml_value(machine, item, span, writer, derivations_seen)?;
            }
            writer.close();
        }
        Value::Lambda(closure) => {
            writer.open("function", &[]);
            match &closure.lambda.param {
                ParamIr::Identifier => {
                    let name = closure
                        .lambda
                        .parameter_name
                        .map(|name| name.to_vec())
                        .unwrap_or_default();
                    writer.empty("varpat", &[("name", &name)]);
                }
                ParamIr::Formals {
                    formals,
                    ellipsis,
                    at,
                    ..
                } => {
                    let mut pattern: Vec<(&str, &[u8])> = Vec::new();
                    let at_name = closure
                        .lambda
                        .parameter_name
                        .map(|name| name.to_vec())
                        .unwrap_or_default();
                    if *at {
                        pattern.push(("name", &at_name));
                    }
                    if *ellipsis {
                        pattern.push(("ellipsis", b"1"));
                    }
                    writer.open("attrspat", &pattern);
                    let mut names: Vec<&[u8]> =
                        formals.iter().map(|formal| &*formal.name).collect();
                    names.sort();
                    for name in names {
                        writer.empty("attr", &[("name", name)]);
                    }
                    writer.close();
                }
            }
            writer.close();
        }
        Value::PrimOp(_) | Value::PrimOpApp(_) => writer.empty("unevaluated", &[]),
        Value::Thunk(_) => writer.empty("unevaluated", &[]),
        Value::Opaque(_) => return Err(opaque_error(span)),
    }
    Ok(())
}

// ---- fromTOML -----------------------------------------------------------------

fn from_toml(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let text = machine.force_string(&arguments[0], span, "`fromTOML`")?;
    let invalid = |detail: String| {
        error(
            codes::INVALID_JSON,
            format!("invalid TOML: {detail}"),
            span,
            "parsed here",
            "check the TOML text (TOML 1.0); dates and times have no value in the language",
        )
    };
    let text = std::str::from_utf8(&text).map_err(|_| invalid("the text is not UTF-8".into()))?;
    let table: toml::Table = text
        .parse()
        .map_err(|parse_error: toml::de::Error| invalid(parse_error.message().to_string()))?;
    if let Some(feature) = super::toml_1_1::feature(text) {
        return Err(invalid(format!(
            "{feature} is TOML 1.1, which Nix's TOML 1.0 parser refuses"
        )));
    }
    convert(&toml::Value::Table(table)).map_err(invalid)
}

fn convert(value: &toml::Value) -> Result<Value, String> {
    Ok(match value {
        toml::Value::String(text) => Value::string_from(text),
        toml::Value::Integer(number) => Value::Int(*number),
        toml::Value::Float(number) => Value::Float(*number),
        toml::Value::Boolean(boolean) => Value::Bool(*boolean),
        toml::Value::Datetime(_) => return Err("dates and times are not supported".into()),
        toml::Value::Array(items) => {
            let items = items.iter().map(convert).collect::<Result<Vec<_>, _>>()?;
            Value::List(crate::value::List::from(items))
        }
        toml::Value::Table(table) => {
            let mut entries = Vec::with_capacity(table.len());
            for (name, inner) in table {
                entries.push(Attr {
                    name: crate::name::Name::new(name.as_bytes()),
                    value: convert(inner)?,
                    span: None,
                });
            }
            Value::Attrs(Attrs::from_unsorted(entries))
        }
    })
}
