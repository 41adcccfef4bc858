//! A provider's facts (`provides.SERVICE.facts`): plain, non-secret values it
//! publishes to its consumers (a port, a database name). They are read on the
//! provider's worker and cross to the consumer's as data, so they hold nothing but
//! null, booleans, numbers, strings, lists and records; a secret anywhere in them is
//! E211, anything else that is not data E303. Records keep their keys sorted, so the
//! same facts always give the consumer the same value. Must not evaluate anything
//! but the facts themselves.

use std::collections::BTreeMap;

use lang::value::{Attr, Attrs, EvalResult};
use lang::{Diagnostic, Machine, Span, Value, codes};

/// How deep facts may nest: deeper is refused rather than followed.
const MAX_DEPTH: usize = 32;

/// One published value. Read back from a build cache no deeper than facts are
/// read from a module (see [`deserialize`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub enum Fact {
    Null,
    Bool(bool),
    Int(i64),
    /// Kept by its bits in the build cache: JSON has no NaN or infinities.
    Float(#[serde(with = "super::serial::float")] f64),
    String(String),
    List(Vec<Fact>),
    Record(BTreeMap<String, Fact>),
}

/// A provider's facts: a record.
pub type Facts = BTreeMap<String, Fact>;

/// Facts read back from a build cache: a cache file is not trusted to nest only
/// as deep as the facts it was written from (a list in a list is two bytes, and
/// a few thousand of them would overflow the stack that reads or drops them).
mod deserialize {
    use std::collections::BTreeMap;
    use std::fmt;

    use serde::de::{self, DeserializeSeed, EnumAccess, MapAccess, SeqAccess, VariantAccess};
    use serde::{Deserialize, Deserializer};

    use super::{Fact, MAX_DEPTH};

    /// Deeper than any fact a module can publish.
    const MAX_READ_DEPTH: usize = 2 * MAX_DEPTH;

    /// The variants, in the order the derived `Serialize` numbers them.
    #[derive(Deserialize)]
    enum Kind {
        Null,
        Bool,
        Int,
        Float,
        String,
        List,
        Record,
    }

    const VARIANTS: &[&str] = &["Null", "Bool", "Int", "Float", "String", "List", "Record"];

    impl<'de> Deserialize<'de> for Fact {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Fact, D::Error> {
            Nested(0).deserialize(deserializer)
        }
    }

    /// A fact `0` levels down.
    #[derive(Clone, Copy)]
    struct Nested(usize);

    impl<'de> DeserializeSeed<'de> for Nested {
        type Value = Fact;

        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Fact, D::Error> {
            if self.0 > MAX_READ_DEPTH {
                return Err(de::Error::custom(format!(
                    "facts nested deeper than {MAX_READ_DEPTH} levels"
                )));
            }
            deserializer.deserialize_enum("Fact", VARIANTS, self)
        }
    }

    impl<'de> de::Visitor<'de> for Nested {
        type Value = Fact;

        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("a fact")
        }

        fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Fact, A::Error> {
            let (kind, value) = data.variant::<Kind>()?;
            let deeper = Nested(self.0 + 1);
            Ok(match kind {
                Kind::Null => {
                    value.unit_variant()?;
                    Fact::Null
                }
                Kind::Bool => Fact::Bool(value.newtype_variant()?),
                Kind::Int => Fact::Int(value.newtype_variant()?),
                Kind::Float => Fact::Float(value.newtype_variant_seed(Float)?),
                Kind::String => Fact::String(value.newtype_variant()?),
                Kind::List => Fact::List(value.newtype_variant_seed(List(deeper))?),
                Kind::Record => Fact::Record(value.newtype_variant_seed(Record(deeper))?),
            })
        }
    }

    /// A float as `serial::float` keeps it.
    struct Float;

    impl<'de> DeserializeSeed<'de> for Float {
        type Value = f64;

        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<f64, D::Error> {
            crate::link::serial::float::deserialize(deserializer)
        }
    }

    /// A list of facts `0` levels down.
    struct List(Nested);

    impl<'de> DeserializeSeed<'de> for List {
        type Value = Vec<Fact>;

        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Fact>, D::Error> {
            deserializer.deserialize_seq(self)
        }
    }

    impl<'de> de::Visitor<'de> for List {
        type Value = Vec<Fact>;

        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("a list of facts")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Vec<Fact>, A::Error> {
            let mut list = Vec::new();
            while let Some(fact) = items.next_element_seed(self.0)? {
                list.push(fact);
            }
            Ok(list)
        }
    }

    /// A record of facts `0` levels down.
    struct Record(Nested);

    impl<'de> DeserializeSeed<'de> for Record {
        type Value = BTreeMap<String, Fact>;

        fn deserialize<D: Deserializer<'de>>(
            self,
            deserializer: D,
        ) -> Result<BTreeMap<String, Fact>, D::Error> {
            deserializer.deserialize_map(self)
        }
    }

    impl<'de> de::Visitor<'de> for Record {
        type Value = BTreeMap<String, Fact>;

        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("a record of facts")
        }

        fn visit_map<A: MapAccess<'de>>(
            self,
            mut entries: A,
        ) -> Result<BTreeMap<String, Fact>, A::Error> {
            let mut record = BTreeMap::new();
            while let Some(name) = entries.next_key::<String>()? {
                record.insert(name, entries.next_value_seed(self.0)?);
            }
            Ok(record)
        }
    }
}

/// Reads `value`, the `facts` of `what` ("`provides.postgres` of module `postgres`")
/// declared at `span`: None (with its diagnostics) when it is not plain data.
pub fn read(
    machine: &mut Machine,
    value: &Value,
    span: Span,
    what: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Option<Facts>> {
    let mut reader = Reader {
        machine,
        what,
        diagnostics,
        refused: false,
    };
    let facts = match reader.machine.force(value, span)? {
        Value::Null => Some(Facts::new()),
        Value::Attrs(attrs) => Some(reader.record(&attrs, span, "facts", 0)?),
        other => {
            reader.not_data(
                "facts",
                &other,
                span,
                "write `facts = { port = settings.port; };`",
            );
            None
        }
    };
    Ok(facts.filter(|_| !reader.refused))
}

struct Reader<'a, 'm> {
    machine: &'m mut Machine,
    what: &'a str,
    diagnostics: &'a mut Vec<Diagnostic>,
    refused: bool,
}

impl Reader<'_, '_> {
    fn record(&mut self, attrs: &Attrs, span: Span, at: &str, depth: usize) -> EvalResult<Facts> {
        let mut facts = Facts::new();
        for attr in attrs.iter() {
            let name = String::from_utf8_lossy(&attr.name).into_owned();
            let span = attr.span.unwrap_or(span);
            let at = format!("{at}.{}", shown_name(&name));
            if let Some(fact) = self.fact(&attr.value, span, &at, depth + 1)? {
                facts.insert(name, fact);
            }
        }
        Ok(facts)
    }

    fn fact(
        &mut self,
        value: &Value,
        span: Span,
        at: &str,
        depth: usize,
    ) -> EvalResult<Option<Fact>> {
        if depth > MAX_DEPTH {
            self.refused = true;
            self.diagnostics.push(
                Diagnostic::error(
                    codes::INVALID_DECLARATION,
                    format!(
                        "`{at}` of {} nests deeper than {MAX_DEPTH} levels",
                        self.what
                    ),
                )
                .with_primary(span, "nested here")
                .with_help("facts are a few plain values a consumer reads: publish them flatter"),
            );
            return Ok(None);
        }
        let fact = match self.machine.force(value, span)? {
            Value::Null => Fact::Null,
            Value::Bool(b) => Fact::Bool(b),
            Value::Int(i) => Fact::Int(i),
            Value::Float(f) => Fact::Float(f),
            Value::String(text) => Fact::String(String::from_utf8_lossy(&text).into_owned()),
            Value::Attrs(attrs) => Fact::Record(self.record(&attrs, span, at, depth)?),
            Value::List(items) => {
                let mut list = Vec::with_capacity(items.len());
                for (index, item) in items.iter().enumerate() {
                    let at = format!("{at}[{index}]");
                    if let Some(fact) = self.fact(item, span, &at, depth + 1)? {
                        list.push(fact);
                    }
                }
                Fact::List(list)
            }
            Value::Opaque(_) => {
                self.refused = true;
                self.diagnostics.push(
                    Diagnostic::error(
                        codes::SECRET_IN_FACTS,
                        format!(
                            "`{at}` of {} is a secret: facts are published to every consumer as plain data",
                            self.what
                        ),
                    )
                    .with_primary(span, "a secret here")
                    .with_help("remove it from `facts`: a consumer gets its own credential as `credentials.NAME` (and its path as `logins.NAME.path`); a secret for the provider itself is a `needs` entry"),
                );
                return Ok(None);
            }
            other => {
                self.not_data(
                    at,
                    &other,
                    span,
                    "facts hold null, booleans, numbers, strings, lists and records (a path becomes a string with `toString`, but the provider's paths mean nothing on the consumer)",
                );
                return Ok(None);
            }
        };
        Ok(Some(fact))
    }

    fn not_data(&mut self, at: &str, value: &Value, span: Span, help: &str) {
        self.refused = true;
        self.diagnostics.push(
            Diagnostic::error(
                codes::INVALID_DECLARATION,
                format!(
                    "`{at}` of {} must be plain data, not {}",
                    self.what,
                    value.describe_type()
                ),
            )
            .with_primary(span, "published here")
            .with_help(help.to_string()),
        );
    }
}

/// An attribute name as it is written in a path of names (`facts."a b"`).
fn shown_name(name: &str) -> String {
    if crate::names::is_identifier(name) {
        name.to_string()
    } else {
        format!("\"{}\"", plan::display::escaped(name))
    }
}

/// The facts as the consumer's `shapes` sees them (`logins.NAME.facts`).
pub fn to_value(facts: &Facts) -> Value {
    record_value(facts)
}

fn record_value(facts: &Facts) -> Value {
    Value::Attrs(Attrs::from_unsorted(
        facts
            .iter()
            .map(|(name, fact)| Attr {
                name: lang::Name::new(name.as_bytes()),
                value: fact_value(fact),
                span: None,
            })
            .collect(),
    ))
}

fn fact_value(fact: &Fact) -> Value {
    match fact {
        Fact::Null => Value::Null,
        Fact::Bool(b) => Value::Bool(*b),
        Fact::Int(i) => Value::Int(*i),
        Fact::Float(f) => Value::Float(*f),
        Fact::String(text) => Value::string_from(text),
        Fact::List(items) => Value::List(lang::value::List::from(
            items.iter().map(fact_value).collect::<Vec<Value>>(),
        )),
        Fact::Record(record) => record_value(record),
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::rc::Rc;

    use lang::Limits;

    use super::*;
    use crate::link::SecretHandle;
    use crate::stdlib::MeshLoader;

    /// Evaluates `source` (a function of one secret) with a secret handle, as the
    /// language gives one to `shapes`, and reads the result as facts.
    fn read_with_a_secret(source: &str) -> (Machine, Option<Facts>, Vec<Diagnostic>) {
        let loader = Rc::new(MeshLoader::new(PathBuf::from("/nonexistent")));
        let mut machine = Machine::new(loader, Vec::new(), Limits::default());
        let function = machine
            .eval_source("facts.nix", None, source.as_bytes().into(), Path::new("/"))
            .expect("evaluates");
        let secret = Value::Opaque(Rc::new(Box::new(SecretHandle {
            sealed: "SEALED-CONTENT".to_string(),
        })));
        let value = machine
            .call(function, secret, Span::default())
            .expect("calls");
        let mut diagnostics = Vec::new();
        let facts = read(
            &mut machine,
            &value,
            Span::default(),
            "`provides.postgres` of module `postgres`",
            &mut diagnostics,
        )
        .expect("reads");
        (machine, facts, diagnostics)
    }

    #[test]
    fn a_secret_in_facts_is_e211_at_its_line_and_its_content_is_never_shown() {
        let (machine, facts, diagnostics) = read_with_a_secret(
            "secret: {\n  port = 5432;\n  admin = { user = \"postgres\";\n    password = secret; };\n}\n",
        );
        assert_eq!(facts, None);
        let [diagnostic] = diagnostics.as_slice() else {
            panic!("one diagnostic: {diagnostics:?}");
        };
        assert_eq!(diagnostic.code, codes::SECRET_IN_FACTS);
        assert!(
            diagnostic.message.contains("`facts.admin.password`"),
            "{}",
            diagnostic.message
        );
        assert!(diagnostic.help.as_deref().unwrap_or("").contains("needs"));
        let span = diagnostic.primary.as_ref().expect("located").span;
        let file = machine.sources.get(span.file).expect("known file");
        assert_eq!(file.line_column(span.start), (4, 5));
        assert!(!format!("{diagnostic:?}").contains("SEALED-CONTENT"));
    }

    #[test]
    fn a_secret_in_a_list_of_facts_is_refused_too() {
        let (_, facts, diagnostics) = read_with_a_secret("secret: { hosts = [ \"a\" secret ]; }");
        assert_eq!(facts, None);
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].code, codes::SECRET_IN_FACTS);
        assert!(diagnostics[0].message.contains("`facts.hosts[1]`"));
    }

    #[test]
    fn plain_facts_round_trip_sorted() {
        let (_, facts, diagnostics) = read_with_a_secret(
            "_: { z = [ 1 2.5 null ]; a = { b = true; }; port = 5432; name = \"shop\"; }",
        );
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let facts = facts.expect("plain data");
        assert_eq!(facts.keys().collect::<Vec<_>>(), ["a", "name", "port", "z"]);
        assert_eq!(facts["port"], Fact::Int(5432));
        let Value::Attrs(record) = to_value(&facts) else {
            panic!("a record");
        };
        assert!(matches!(record.get(b"port"), Some(Value::Int(5432))));
        assert!(matches!(record.get(b"z"), Some(Value::List(items)) if items.len() == 3));
    }

    /// A list in a list, `depth` times, around a null, as postcard writes it: the
    /// variant `List` (5), one element, and so on down.
    fn nested_lists(depth: usize) -> Vec<u8> {
        let mut bytes = [5u8, 1].repeat(depth);
        bytes.push(0);
        bytes
    }

    #[test]
    fn facts_read_back_nest_no_deeper_than_facts_can_be_published() {
        let shallow: Fact = postcard::from_bytes(&nested_lists(MAX_DEPTH + 1)).expect("read");
        let mut depth = 0;
        let mut fact = &shallow;
        while let Fact::List(items) = fact {
            depth += 1;
            fact = &items[0];
        }
        assert_eq!((depth, fact), (MAX_DEPTH + 1, &Fact::Null));
        // deep enough to overflow the stack if followed: refused, not followed
        assert!(postcard::from_bytes::<Fact>(&nested_lists(1_000_000)).is_err());
        // every kind round-trips
        let every = Fact::Record(BTreeMap::from([
            (
                "a".to_string(),
                Fact::List(vec![Fact::Null, Fact::Bool(true)]),
            ),
            ("b".to_string(), Fact::Int(-7)),
            ("c".to_string(), Fact::Float(f64::NAN)),
            ("d".to_string(), Fact::String("shop".to_string())),
        ]));
        let bytes = postcard::to_stdvec(&every).expect("written");
        let back: Fact = postcard::from_bytes(&bytes).expect("read");
        assert_eq!(postcard::to_stdvec(&back).expect("written"), bytes);
    }

    #[test]
    fn a_function_in_facts_is_not_data() {
        let (_, facts, diagnostics) = read_with_a_secret("_: { port = x: x; }");
        assert_eq!(facts, None);
        assert_eq!(diagnostics[0].code, codes::INVALID_DECLARATION);
        assert!(diagnostics[0].message.contains("must be plain data"));
    }
}
