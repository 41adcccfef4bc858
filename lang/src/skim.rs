//! A file of plain data read without building all of its syntax tree: a
//! 10,000-node inventory whose build compiles one node needs the tree of one
//! entry, not of 10,000. The file is read once, byte by byte, for a strict subset
//! of the lexer's tokens ([`Token`]: no token the lexer would read otherwise, and
//! whitespace and comments skipped by the lexer's own [`crate::lexer::trivia_end`]),
//! checked to be plain data (what `compile::deferred` defers), and given as a
//! *skimmed* tree: its top set, and
//! each set at its top whose bindings are single distinct names, are built as the
//! parser builds them; any other value under them is parsed alone from its text
//! ([`crate::parser::parse_at`]), except a set literal under those sets of at least
//! [`SMALLEST`] bytes, which is left *hollow*: a set with no bindings under the
//! literal's span.
//!
//! Invariant: compiled with the file's text, a skimmed tree evaluates exactly as
//! the parsed one (every hollow set is deferred by the compiler, which parses it
//! when it is first evaluated), and its names come in the order interning the
//! parsed tree meets them. Anything else (code, a float, a name bound twice, a
//! string with escapes, an unterminated comment) gives None: the file is parsed.

use std::collections::HashSet;
use std::hash::BuildHasherDefault;

use crate::name::Name;
use crate::span::{FileId, Span};
use crate::syntax::{AttrName, Binding, Expr, ExprKind};

/// A set literal shorter than this is never hollow (the compiler lowers it with
/// its file): `compile::deferred`'s threshold.
pub(crate) const SMALLEST: u32 = 64;

/// Plain data nested deeper than this is not skimmed (the file is parsed).
const DEEPEST: usize = 64;

/// A skimmed file: its tree, and its names in the order interning the parsed tree
/// meets them first ([`crate::symbols::first_mentions`]).
pub struct Skimmed {
    pub expr: Expr,
    pub names: Box<[Name]>,
}

/// The skimmed tree of `source` (file `file`), or None when it is not a set of
/// plain data with single distinct names at its top (then parse it).
pub fn skim(source: &[u8], file: FileId) -> Option<Skimmed> {
    let mut reader = Reader {
        source,
        file,
        position: 0,
        current: None,
        seen: HashSet::default(),
        names: Vec::new(),
        parts: Vec::new(),
        paths: Vec::new(),
        recent: [&[]; RECENT],
    };
    let top = reader.value(0)?;
    if reader.peek()? != Token::Eof {
        return None;
    }
    let Value::Set(Some(fields)) = top.kind else {
        return None;
    };
    let mut bindings = Vec::with_capacity(fields.len());
    for field in fields {
        let value = match field.value.kind {
            Value::Set(Some(inner)) => {
                let mut inner_bindings = Vec::with_capacity(inner.len());
                for inner_field in inner {
                    let value = leaf(source, file, &inner_field.value)?;
                    inner_bindings.push(binding(inner_field.name, value, inner_field.span));
                }
                Expr {
                    kind: ExprKind::Attrs {
                        recursive: false,
                        bindings: inner_bindings,
                    },
                    span: field.value.span,
                }
            }
            _ => parsed(source, file, field.value.span)?,
        };
        bindings.push(binding(field.name, value, field.span));
    }
    let expr = Expr {
        kind: ExprKind::Attrs {
            recursive: false,
            bindings,
        },
        span: top.span,
    };
    Some(Skimmed {
        expr,
        names: reader.names.into_boxed_slice(),
    })
}

/// A value under the top two sets: hollow when it is a set of some size, else
/// parsed from its text.
fn leaf(source: &[u8], file: FileId, value: &Located) -> Option<Expr> {
    if matches!(value.kind, Value::Set(_)) && value.span.len() >= SMALLEST as usize {
        return Some(Expr {
            kind: ExprKind::Attrs {
                recursive: false,
                bindings: Vec::new(),
            },
            span: value.span,
        });
    }
    parsed(source, file, value.span)
}

/// The value at `span` parsed alone (None if that finds an error: never, for
/// what the skim read as plain data).
fn parsed(source: &[u8], file: FileId, span: Span) -> Option<Expr> {
    let parsed = crate::parser::parse_at(source, file, span.start as usize, span.end as usize);
    (parsed.errors.is_empty() && parsed.expr.span == span).then_some(parsed.expr)
}

fn binding((name, name_span): (Vec<u8>, Span), value: Expr, span: Span) -> Binding {
    Binding::Assign {
        path: vec![AttrName::Static {
            name,
            span: name_span,
        }],
        value,
        span,
    }
}

/// A plain value read by the skim: where it is, and, for a set at the top two
/// levels whose bindings are single distinct names, its fields.
struct Located {
    span: Span,
    kind: Value,
}

enum Value {
    /// A set literal; its fields when they were kept.
    Set(Option<Vec<Field>>),
    Other,
}

struct Field {
    name: (Vec<u8>, Span),
    value: Located,
    /// The binding's, from its name to its `;`.
    span: Span,
}

/// A token of plain data, as the lexer would make it: the skim reads only these
/// (and whitespace and comments), and gives up on any other byte.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Token {
    LeftBrace,
    RightBrace,
    LeftBracket,
    RightBracket,
    Assign,
    Semicolon,
    Dot,
    /// An identifier that is no keyword.
    Identifier,
    /// A string with nothing to unescape and no `$` (the lexer's `PlainString`).
    String,
    /// Decimal digits, not followed by what would make them more than an integer.
    Integer,
    Eof,
}

/// What may follow an identifier or an integer for the lexer to end it there in
/// data: what a set or list goes on with (nothing that would make it a path, a
/// URI, a float or a longer token).
fn ends_a_word(byte: Option<&u8>) -> bool {
    matches!(
        byte,
        None | Some(
            b' ' | b'\t'
                | b'\n'
                | b'\r'
                | b';'
                | b'='
                | b'.'
                | b']'
                | b'}'
                | b'#'
                | b'"'
                | b'['
                | b'{'
        )
    )
}

struct Reader<'a> {
    source: &'a [u8],
    file: FileId,
    /// Where the next token is looked for.
    position: usize,
    /// The current token and its span, once read.
    current: Option<(Token, Span)>,
    seen: HashSet<&'a [u8], BuildHasherDefault<crate::symbols::NameHasher>>,
    names: Vec<Name>,
    /// The names of the binding paths of the sets being read, one after the
    /// other (a set's own at the end, removed when it ends): no allocation a
    /// binding.
    parts: Vec<&'a [u8]>,
    /// Each of those paths, as where its names start in `parts` and how many.
    paths: Vec<(u32, u32)>,
    /// Names seen already, by [`recent_slot`]: the names every entry repeats
    /// (`key`, `address`, `modules`) are found here without hashing them.
    recent: [&'a [u8]; RECENT],
}

/// How many bytes at the start of `bytes` are `wanted` (a plain loop: the words
/// of an inventory are a few bytes long, shorter than an iterator's set-up).
#[inline]
fn run_of(bytes: &[u8], wanted: impl Fn(u8) -> bool) -> usize {
    let mut length = 0;
    while length < bytes.len() && wanted(bytes[length]) {
        length += 1;
    }
    length
}

/// The length of the plain string whose text starts `text` (after its `"`), up
/// to its closing `"`: None when it holds what the lexer would read otherwise
/// (`\`, `$`, a carriage return) or is not closed. Short strings (most of an
/// inventory's) are read byte by byte, which costs less than setting up a search.
fn plain_string_length(text: &[u8]) -> Option<usize> {
    const SHORT: usize = 24;
    for (length, byte) in text.iter().take(SHORT).enumerate() {
        match byte {
            b'"' => return Some(length),
            b'\\' | b'$' | b'\r' => return None,
            _ => {}
        }
    }
    let rest = text.get(SHORT..)?;
    let length = SHORT + memchr::memchr3(b'"', b'\\', b'$', rest)?;
    if text[length] != b'"' || memchr::memchr(b'\r', &text[SHORT..length]).is_some() {
        return None;
    }
    Some(length)
}

/// How many names [`Reader::recent`] holds.
const RECENT: usize = 64;

/// Where `name` goes in [`Reader::recent`]: from its length and its first and
/// last bytes, which is enough to keep apart the few names an inventory repeats.
fn recent_slot(name: &[u8]) -> usize {
    let first = name.first().copied().unwrap_or(0) as usize;
    let last = name.last().copied().unwrap_or(0) as usize;
    (name.len().wrapping_mul(7) ^ first.wrapping_mul(3) ^ last) % RECENT
}

impl<'a> Reader<'a> {
    /// The current token (None: a byte the skim does not read).
    fn peek(&mut self) -> Option<Token> {
        if self.current.is_none() {
            self.current = Some(self.read()?);
        }
        self.current.map(|(token, _)| token)
    }

    /// Reads the token at `position`, after whitespace and comments.
    fn read(&mut self) -> Option<(Token, Span)> {
        let source = self.source;
        // an unterminated comment is the lexer's error: the file is parsed
        let position = crate::lexer::trivia_end(source, self.position).ok()?;
        let start = position;
        let Some(&byte) = source.get(start) else {
            self.position = start;
            return Some((Token::Eof, Span::new(self.file, start, start)));
        };
        let (token, end) = match byte {
            b'{' => (Token::LeftBrace, start + 1),
            b'}' => (Token::RightBrace, start + 1),
            b'[' => (Token::LeftBracket, start + 1),
            b']' => (Token::RightBracket, start + 1),
            b';' => (Token::Semicolon, start + 1),
            b'.' => (Token::Dot, start + 1),
            // `==` is another token
            b'=' if source.get(start + 1) != Some(&b'=') => (Token::Assign, start + 1),
            b'"' => (
                Token::String,
                start + plain_string_length(&source[start + 1..])? + 2,
            ),
            b'0'..=b'9' => {
                let length = run_of(&source[start..], |byte| byte.is_ascii_digit());
                // beyond i64 the lexer says so; a `.` makes a float
                if length > 18
                    || !ends_a_word(source.get(start + length))
                    || source.get(start + length) == Some(&b'.')
                {
                    return None;
                }
                (Token::Integer, start + length)
            }
            byte if byte.is_ascii_alphabetic() || byte == b'_' => {
                let length = run_of(&source[start..], |byte| {
                    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'\'' | b'-')
                });
                let word = &source[start..start + length];
                if crate::lexer::is_keyword(word) || !ends_a_word(source.get(start + length)) {
                    return None;
                }
                (Token::Identifier, start + length)
            }
            _ => return None,
        };
        self.position = end;
        Some((token, Span::new(self.file, start, end)))
    }

    /// The current token's span (after [`Reader::peek`]).
    fn span(&self) -> Span {
        self.current.map(|(_, span)| span).unwrap_or_default()
    }

    fn advance(&mut self) {
        self.current = None;
    }

    /// The current token, an identifier or a string, as a name (an attribute's, or
    /// `true`, `false`, `null`): noted if it is its first mention; with its span.
    fn name(&mut self) -> Option<(&'a [u8], Span)> {
        let token = self.peek()?;
        let span = self.span();
        let bytes = match token {
            Token::Identifier => self.source.get(span.start as usize..span.end as usize)?,
            Token::String => self
                .source
                .get(span.start as usize + 1..span.end as usize - 1)?,
            _ => return None,
        };
        self.advance();
        let slot = recent_slot(bytes);
        // (an empty name is never taken as found: the slots start empty)
        if bytes.is_empty() || self.recent[slot] != bytes {
            if self.seen.insert(bytes) {
                self.names.push(Name::new(bytes));
            }
            self.recent[slot] = bytes;
        }
        Some((bytes, span))
    }

    /// A plain value at nesting `depth`: its fields kept when it is a set at the
    /// top two levels whose bindings are single distinct names.
    fn value(&mut self, depth: usize) -> Option<Located> {
        if depth > DEEPEST {
            return None;
        }
        let token = self.peek()?;
        let start = self.span();
        let other = |span| {
            Some(Located {
                span,
                kind: Value::Other,
            })
        };
        match token {
            Token::Integer | Token::String => {
                self.advance();
                other(start)
            }
            Token::Identifier => {
                let (word, span) = self.name()?;
                if !matches!(word, b"true" | b"false" | b"null") {
                    return None;
                }
                other(span)
            }
            Token::LeftBracket => {
                self.advance();
                while self.peek()? != Token::RightBracket {
                    self.value(depth + 1)?;
                }
                let end = self.span();
                self.advance();
                other(start.to(end))
            }
            Token::LeftBrace => {
                self.advance();
                self.set(start, depth)
            }
            _ => None,
        }
    }

    /// The bindings of a set literal, its `{` taken, and its `}`.
    fn set(&mut self, start: Span, depth: usize) -> Option<Located> {
        let keep = depth <= 1;
        let mut fields = Vec::new();
        let (parts_base, paths_base) = (self.parts.len(), self.paths.len());
        let mut single = true;
        while self.peek()? != Token::RightBrace {
            let binding_start = self.span();
            let (first, first_span) = self.name()?;
            let path_start = self.parts.len();
            self.parts.push(first);
            while self.peek()? == Token::Dot {
                self.advance();
                let name = self.name()?.0;
                self.parts.push(name);
            }
            let path_length = self.parts.len() - path_start;
            if self.peek()? != Token::Assign {
                return None;
            }
            self.advance();
            let value = self.value(depth + 1)?;
            if self.peek()? != Token::Semicolon {
                return None;
            }
            let end = self.span();
            self.advance();
            single &= path_length == 1;
            if keep && single {
                fields.push(Field {
                    name: (first.to_vec(), first_span),
                    value,
                    span: binding_start.to(end),
                });
            }
            // a file of over 4 GiB is no inventory: the lexer's spans end there too
            self.paths.push((
                u32::try_from(path_start).ok()?,
                u32::try_from(path_length).ok()?,
            ));
        }
        let end = self.span();
        self.advance();
        // as `compile::deferred` asks of plain data: no path equal to another or a
        // prefix of one (then merging them reports nothing)
        let parts = &self.parts;
        let path =
            |&(start, length): &(u32, u32)| &parts[start as usize..(start + length) as usize];
        let paths = &mut self.paths[paths_base..];
        paths.sort_unstable_by(|left, right| path(left).cmp(path(right)));
        if paths
            .windows(2)
            .any(|pair| path(&pair[1]).starts_with(path(&pair[0])))
        {
            return None;
        }
        self.parts.truncate(parts_base);
        self.paths.truncate(paths_base);
        Some(Located {
            span: start.to(end),
            kind: Value::Set((keep && single).then_some(fields)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::skim;
    use crate::span::FileId;

    fn parsed(text: &str) -> crate::syntax::Expr {
        let parsed = crate::parser::parse(text.as_bytes(), FileId::default());
        assert!(parsed.errors.is_empty(), "{text}: {:?}", parsed.errors);
        parsed.expr
    }

    #[test]
    fn only_sets_of_plain_data_with_single_names_at_the_top_are_skimmed() {
        for text in [
            "{ }",
            "{ a = 1; b = [ \"x\" true false null 25 ]; }",
            "{ nodes = { n1 = { key = \"k\"; settings.m.replicas = 3; }; }; }",
            "# comment\n{ \"a b\" = { c = { d = [ { e = 1; } ]; }; }; }",
        ] {
            assert!(skim(text.as_bytes(), FileId::default()).is_some(), "{text}");
        }
        for text in [
            "[ 1 ]",
            "1",
            "{ a.b = 1; }",
            "{ a = 1; a = 2; }",
            "rec { a = 1; }",
            "{ a = x; }",
            "{ a = -1; }",
            "{ a = \"${b}\"; }",
            "{ a = \"\\n\"; }",
            "{ a = ''x''; }",
            "{ a = ./p; }",
            "{ a = http://x; }",
            "{ a = { b = 1; b.c = 2; }; }",
            "{ a = { b = { c = 1; c = 2; }; }; }",
            "{ a = { inherit b; }; }",
            "{ a = 1; } x",
            "{ a = 1 }",
            "{ a = \"unterminated; }",
            "{ or = 1; }",
            "{ a = 99999999999999999999; }",
            "{ a = 2.5; }",
            "{ a = 1a; }",
            "{ a = b/c; }",
            "{ a = b:c; }",
            "{ a == 1; }",
            "{ a = 1; } /* unterminated",
        ] {
            assert!(skim(text.as_bytes(), FileId::default()).is_none(), "{text}");
        }
        // a string's text is read byte by byte up to 24 bytes and searched past
        // them: what the lexer reads otherwise is found on both sides of that
        for length in [0, 1, 22, 23, 24, 25, 26, 60] {
            let plain = "x".repeat(length);
            let text = format!("{{ a = \"{plain}\"; b = \"{plain}\"; }}");
            assert!(skim(text.as_bytes(), FileId::default()).is_some(), "{text}");
            for odd in ["$", "\\", "\r", "${b}"] {
                let text = format!("{{ a = \"{plain}{odd}x\"; }}");
                assert!(
                    skim(text.as_bytes(), FileId::default()).is_none(),
                    "{text:?}"
                );
            }
            let unterminated = format!("{{ a = \"{plain}");
            assert!(skim(unterminated.as_bytes(), FileId::default()).is_none());
        }
    }

    /// A value described for comparison: every attribute with its name and the
    /// line and column it is at, every leaf printed.
    fn described(machine: &mut crate::Machine, value: &crate::Value, out: &mut String) {
        use crate::Value;
        let value = machine
            .force(value, crate::Span::default())
            .unwrap_or_else(|error| panic!("{error:?}"));
        match &value {
            Value::Attrs(attrs) => {
                out.push('{');
                for attr in attrs.iter() {
                    let at = attr.span.map(|span| {
                        machine
                            .sources
                            .get(span.file)
                            .map(|file| file.line_column(span.start))
                    });
                    out.push_str(&format!("{}@{at:?}=", String::from_utf8_lossy(&attr.name)));
                    described(machine, &attr.value, out);
                    out.push(';');
                }
                out.push('}');
            }
            Value::List(items) => {
                out.push('[');
                for item in items.iter() {
                    described(machine, item, out);
                    out.push(' ');
                }
                out.push(']');
            }
            other => {
                let printed = machine.print_strict(other).expect("printable");
                out.push_str(&String::from_utf8_lossy(&printed));
            }
        }
    }

    /// Two machines reading `loader`'s files under `/d`: one parses them, the other
    /// has a parse cache that skims.
    fn parsing_and_skimming(loader: &std::rc::Rc<crate::MemoryLoader>) -> [crate::Machine; 2] {
        let machine =
            || crate::Machine::new(loader.clone(), vec!["/d".into()], crate::Limits::default());
        [
            machine(),
            machine().with_parse_cache(std::sync::Arc::new(crate::ParseCache::skimming())),
        ]
    }

    /// A file of plain data, made from `seed`: sets and lists nested a few levels,
    /// names plain and quoted, paths inside entries, comments, numbers, strings.
    fn plain_file(seed: u64) -> String {
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut next = move |bound: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % bound
        };
        fn value(next: &mut dyn FnMut(u64) -> u64, depth: usize, out: &mut String) {
            match if depth > 3 { next(4) } else { next(7) } {
                0 => out.push_str(&format!("{}", next(1000))),
                1 => out.push_str(&format!("\"text {} with some length to it\"", next(50))),
                2 => out.push_str(["true", "false", "null", "1.5"][next(4) as usize]),
                3 => out.push_str(&format!("\"{}\"", "v".repeat(next(90) as usize))),
                4 => {
                    out.push_str("[ ");
                    for _ in 0..next(4) {
                        value(next, depth + 1, out);
                        out.push(' ');
                    }
                    out.push(']');
                }
                _ => {
                    out.push_str("{\n");
                    let count = next(6);
                    for index in 0..count {
                        if next(5) == 0 {
                            out.push_str("  # a comment\n");
                        }
                        match next(4) {
                            0 => out.push_str(&format!("  \"n-{index}\" = ")),
                            1 => out.push_str(&format!("  p{index}.q{} = ", next(3))),
                            _ => out.push_str(&format!("  name{index} = ")),
                        }
                        value(next, depth + 1, out);
                        out.push_str(";\n");
                    }
                    out.push('}');
                }
            }
        }
        let mut out = String::from("{\n  nodes = {\n");
        for node in 0..next(12) {
            out.push_str(&format!("    node{node} = "));
            value(&mut next, 2, &mut out);
            out.push_str(";\n");
        }
        out.push_str("  };\n  registry = \"r\";\n}\n");
        out
    }

    /// Evaluated from a skimming cache and without one, a file of plain data gives
    /// the same values at the same places, and interns its names in the same order.
    #[test]
    fn a_skimmed_file_evaluates_as_the_parsed_one() {
        use std::rc::Rc;
        let mut skimmed_files = 0;
        for seed in 0..300 {
            let text = plain_file(seed);
            let mut loader = crate::MemoryLoader::new();
            loader.insert("/d/data.nix", text.clone().into_bytes());
            let loader = Rc::new(loader);
            let mut results = Vec::new();
            for mut machine in parsing_and_skimming(&loader) {
                let value = machine
                    .eval_file(std::path::Path::new("/d/data.nix"))
                    .unwrap_or_else(|errors| panic!("{text}: {errors:?}"));
                let mut out = String::new();
                described(&mut machine, &value, &mut out);
                let order: Vec<_> = [b"name0".as_slice(), b"n-0", b"p0", b"q1", b"true", b"nodes"]
                    .iter()
                    .map(|name| machine.symbols.rank(name))
                    .collect();
                results.push((out, order));
            }
            skimmed_files += usize::from(skim(text.as_bytes(), FileId::default()).is_some());
            assert_eq!(results[0], results[1], "{text}");
        }
        assert!(
            skimmed_files > 150,
            "only {skimmed_files} of 300 files were skimmed"
        );
    }

    /// Files at the edges of what the skim reads (CRLF line ends, the longest
    /// integer it takes, leading zeros, NUL and UTF-8 bytes and comment openers
    /// in strings, `'` in names, a set of 64 bytes or more holding only a comment,
    /// paths merged in a hollow set, an empty name, no whitespace at all) are
    /// skimmed, and read as the parser reads them; imported by code that selects
    /// into a hollow entry, they give the same values, positions and errors.
    #[test]
    fn files_at_the_edges_of_plain_data_are_skimmed_as_they_are_parsed() {
        use std::rc::Rc;
        let long = "x".repeat(70);
        let files = [
            format!(
                "{{\r\n  nodes = {{\r\n    n1 = {{ a = 999999999999999999; b = \"\0\u{e9}#/*\"; c'' = 007; d = \"{long}\"; }};\r\n    n2 = {{ /* {long} */ }};\r\n    n3 = {{ a.b = 1; a.c = [ {{ x = \"{long}\"; }} ]; \"\" = null; }};\r\n  }};\r\n}}"
            ),
            format!("{{nodes={{n1={{a={{b=true;c=[true false null\"{long}\"];}};}};}};}}/**/"),
            format!("{{ nodes = {{ n1 = {{ a = {{ b = {{ c = \"{long}\"; }}; }}; }}; }}; }} # end"),
            format!("{{nodes={{n1={{\"a b\"={{\"\"=1;\"{long}\"=2;}};x=[true{{}}[]1];}};}};}}"),
        ];
        let code = "let d = import ./data.nix; in [ (builtins.unsafeGetAttrPos \"n1\" d.nodes) (builtins.attrNames d.nodes.n1) (map (name: builtins.unsafeGetAttrPos name d.nodes.n1) (builtins.attrNames d.nodes.n1)) __curPos d.nodes.n1.missing ]";
        for text in &files {
            let skimmed = skim(text.as_bytes(), FileId::default())
                .unwrap_or_else(|| panic!("not skimmed: {text:?}"));
            let full = parsed(text);
            assert_eq!(
                crate::symbols::first_mentions(&full),
                skimmed.names,
                "{text:?}"
            );
            assert_eq!(hollowed(full), skimmed.expr, "{text:?}");
            let mut loader = crate::MemoryLoader::new();
            loader.insert("/d/data.nix", text.clone().into_bytes());
            loader.insert("/d/main.nix", code.as_bytes().to_vec());
            let loader = Rc::new(loader);
            let mut results = Vec::new();
            for mut machine in parsing_and_skimming(&loader) {
                let data = machine
                    .eval_file(std::path::Path::new("/d/data.nix"))
                    .unwrap_or_else(|errors| panic!("{text:?}: {errors:?}"));
                let mut out = String::new();
                described(&mut machine, &data, &mut out);
                let main = machine
                    .eval_file(std::path::Path::new("/d/main.nix"))
                    .unwrap_or_else(|errors| panic!("{text:?}: {errors:?}"));
                let crate::Value::List(items) = machine
                    .force(&main, crate::Span::default())
                    .unwrap_or_else(|error| panic!("{error:?}"))
                else {
                    panic!("not a list");
                };
                for item in items.iter().take(4) {
                    let printed = machine.print_strict(item).expect("printable");
                    out.push_str(&String::from_utf8_lossy(&printed));
                }
                let missing = items.get(4).cloned().expect("five items");
                let error = machine
                    .force(&missing, crate::Span::default())
                    .expect_err("no such attribute");
                out.push_str(&format!("{error:?}"));
                let order: Vec<_> = skimmed
                    .names
                    .iter()
                    .map(|name| machine.symbols.rank(name))
                    .collect();
                results.push((out, order));
            }
            assert_eq!(results[0], results[1], "{text:?}");
        }
    }

    /// The parsed tree as the skim gives it: under the top set, in each set whose
    /// bindings are single names, a set of at least `SMALLEST` bytes emptied.
    fn hollowed(mut expr: crate::syntax::Expr) -> crate::syntax::Expr {
        use crate::syntax::{Binding, ExprKind};
        let ExprKind::Attrs { bindings, .. } = &mut expr.kind else {
            return expr;
        };
        for binding in bindings {
            let Binding::Assign { value, .. } = binding else {
                continue;
            };
            let ExprKind::Attrs {
                bindings: inner, ..
            } = &mut value.kind
            else {
                continue;
            };
            let single = inner
                .iter()
                .all(|binding| matches!(binding, Binding::Assign { path, .. } if path.len() == 1));
            if !single {
                continue;
            }
            for binding in inner {
                if let Binding::Assign { value, .. } = binding
                    && value.span.len() >= super::SMALLEST as usize
                    && let ExprKind::Attrs { bindings, .. } = &mut value.kind
                {
                    bindings.clear();
                }
            }
        }
        expr
    }

    /// Whatever the skim takes, the parser takes too, as the same tree (hollowed)
    /// with the same names in the same order: files of plain data with bytes that
    /// could make the lexer read them otherwise put in and taken out at random.
    #[test]
    fn what_the_skim_reads_the_parser_reads_the_same() {
        const TRICKY: &[u8] = b"/:.-'+$\\\"#*1a{}[]=; \n\r\t@<>!?,()&|~`0e";
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        let (mut taken, mut refused) = (0, 0);
        for seed in 0..400 {
            let mut text = plain_file(seed).into_bytes();
            for _ in 0..next(4) {
                let at = next(text.len() + 1);
                if next(3) == 0 && at < text.len() {
                    text.remove(at);
                } else {
                    text.insert(at, TRICKY[next(TRICKY.len())]);
                }
            }
            let Some(skimmed) = skim(&text, FileId::default()) else {
                refused += 1;
                continue;
            };
            taken += 1;
            let shown = String::from_utf8_lossy(&text);
            let parsed = crate::parser::parse(&text, FileId::default());
            assert!(
                parsed.errors.is_empty(),
                "skimmed, but the parser refuses {shown}: {:?}",
                parsed.errors
            );
            assert_eq!(
                crate::symbols::first_mentions(&parsed.expr),
                skimmed.names,
                "{shown}"
            );
            assert_eq!(hollowed(parsed.expr), skimmed.expr, "{shown}");
        }
        assert!(
            taken > 50 && refused > 50,
            "{taken} taken, {refused} refused"
        );
    }

    /// What is not hollow is the parsed tree itself; a hollow set keeps its span.
    #[test]
    fn a_skimmed_tree_is_the_parsed_one_with_large_sets_under_the_top_two_hollow() {
        let long = "x".repeat(80);
        let text = format!(
            "{{\n  registry = \"r\";\n  base = {{ paths = [ \"/a\" ]; users.u = 1; }};\n  nodes = {{\n    small = {{ key = \"k\"; }};\n    big = {{ key = \"{long}\"; modules = [ \"m\" ]; }};\n    list = [ 1 2 ];\n  }};\n}}\n"
        );
        let skimmed = skim(text.as_bytes(), FileId::default()).expect("plain data");
        let full = parsed(&text);
        let mut hollow = full.clone();
        let crate::syntax::ExprKind::Attrs { bindings, .. } = &mut hollow.kind else {
            panic!("a set")
        };
        let crate::syntax::Binding::Assign { value: nodes, .. } = &mut bindings[2] else {
            panic!("nodes")
        };
        let crate::syntax::ExprKind::Attrs { bindings, .. } = &mut nodes.kind else {
            panic!("a set")
        };
        let crate::syntax::Binding::Assign { value: big, .. } = &mut bindings[1] else {
            panic!("big")
        };
        let crate::syntax::ExprKind::Attrs { bindings, .. } = &mut big.kind else {
            panic!("a set")
        };
        bindings.clear();
        assert_eq!(skimmed.expr, hollow);
        assert_eq!(
            skimmed.names,
            crate::symbols::first_mentions(&full),
            "names in the order the parsed tree gives them"
        );
    }
}
