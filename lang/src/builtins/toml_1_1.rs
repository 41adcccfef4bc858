//! What of TOML 1.1 a document uses: `fromTOML`'s parser takes TOML 1.1 and Nix's
//! takes TOML 1.0 only, so a document using what 1.1 added (the escapes `\e` and
//! `\xHH`; line breaks, comments or a trailing comma inside an inline table) is
//! refused, as Nix refuses it. Read from the parser's events over a document that
//! parsed; nothing here decides what the document means.

/// The first TOML 1.1 feature a document (one that parses) uses, if any: the parser
/// takes TOML 1.1, and Nix's takes TOML 1.0 only, so a file it would refuse must be
/// refused here too (a module that works with `meshc` and not with Nix, or the
/// other way, is a surprise either way).
pub(super) fn feature(text: &str) -> Option<&'static str> {
    // each feature needs an inline table or an escape: a document with neither
    // (most) is not lexed a second time
    if !text.contains(['{', '\\']) {
        return None;
    }
    let tokens: Vec<toml_parser::lexer::Token> = toml_parser::Source::new(text).lex().collect();
    let mut detector = Toml11 {
        text,
        nesting: Vec::new(),
        found: None,
    };
    let mut errors: Option<toml_parser::ParseError> = None;
    toml_parser::parser::parse_document(&tokens, &mut detector, &mut errors);
    detector.found
}

/// What a TOML document's events are nested in, for [`feature`].
enum Nesting {
    /// An inline table; `trailing` after a comma that no key followed yet.
    Inline {
        trailing: bool,
    },
    Array,
}

struct Toml11<'s> {
    text: &'s str,
    nesting: Vec<Nesting>,
    found: Option<&'static str>,
}

impl Toml11<'_> {
    fn raw(&self, span: toml_parser::Span) -> &str {
        self.text.get(span.start()..span.end()).unwrap_or_default()
    }

    fn found(&mut self, feature: &'static str) {
        self.found.get_or_insert(feature);
    }

    fn in_inline_table(&self) -> bool {
        matches!(self.nesting.last(), Some(Nesting::Inline { .. }))
    }
}

impl toml_parser::parser::EventReceiver for Toml11<'_> {
    fn inline_table_open(
        &mut self,
        _span: toml_parser::Span,
        _error: &mut dyn toml_parser::ErrorSink,
    ) -> bool {
        self.nesting.push(Nesting::Inline { trailing: false });
        true
    }

    fn inline_table_close(
        &mut self,
        _span: toml_parser::Span,
        _error: &mut dyn toml_parser::ErrorSink,
    ) {
        if let Some(Nesting::Inline { trailing: true }) = self.nesting.pop() {
            self.found("a comma after an inline table's last value");
        }
    }

    fn array_open(
        &mut self,
        _span: toml_parser::Span,
        _error: &mut dyn toml_parser::ErrorSink,
    ) -> bool {
        self.nesting.push(Nesting::Array);
        true
    }

    fn array_close(&mut self, _span: toml_parser::Span, _error: &mut dyn toml_parser::ErrorSink) {
        self.nesting.pop();
    }

    fn value_sep(&mut self, _span: toml_parser::Span, _error: &mut dyn toml_parser::ErrorSink) {
        if let Some(Nesting::Inline { trailing }) = self.nesting.last_mut() {
            *trailing = true;
        }
    }

    fn simple_key(
        &mut self,
        span: toml_parser::Span,
        kind: Option<toml_parser::decoder::Encoding>,
        _error: &mut dyn toml_parser::ErrorSink,
    ) {
        if let Some(Nesting::Inline { trailing }) = self.nesting.last_mut() {
            *trailing = false;
        }
        if kind.is_none() && !self.raw(span).is_ascii() {
            self.found("a bare key that is not ASCII");
        }
        if matches!(kind, Some(toml_parser::decoder::Encoding::BasicString))
            && has_toml_1_1_escape(self.raw(span))
        {
            self.found("the escape `\\e` or `\\xHH`");
        }
    }

    fn scalar(
        &mut self,
        span: toml_parser::Span,
        kind: Option<toml_parser::decoder::Encoding>,
        _error: &mut dyn toml_parser::ErrorSink,
    ) {
        if matches!(
            kind,
            Some(
                toml_parser::decoder::Encoding::BasicString
                    | toml_parser::decoder::Encoding::MlBasicString
            )
        ) && has_toml_1_1_escape(self.raw(span))
        {
            self.found("the escape `\\e` or `\\xHH`");
        }
    }

    fn newline(&mut self, _span: toml_parser::Span, _error: &mut dyn toml_parser::ErrorSink) {
        if self.in_inline_table() {
            self.found("a line break inside an inline table");
        }
    }

    fn comment(&mut self, _span: toml_parser::Span, _error: &mut dyn toml_parser::ErrorSink) {
        if self.in_inline_table() {
            self.found("a comment inside an inline table");
        }
    }
}

/// Whether a basic string's text (quotes included) holds `\e` or `\x`, escapes
/// TOML 1.1 added.
fn has_toml_1_1_escape(raw: &str) -> bool {
    let mut bytes = raw.bytes();
    while let Some(byte) = bytes.next() {
        if byte == b'\\' {
            match bytes.next() {
                Some(b'e' | b'x') => return true,
                _ => continue,
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::feature;

    /// What TOML 1.1 added is found; what looks like it in TOML 1.0 is not.
    #[test]
    fn finds_what_toml_1_1_added_and_nothing_else() {
        for added in [
            "a = \"\\e\"",
            "a = \"\\x41\"",
            "a = \"\"\"\n\\e\"\"\"",
            "\"k\\x41\" = 1",
            "a = { b = 1, }",
            "a = {\n b = 1 }",
            "a = { b = 1, # c\n d = 2 }",
        ] {
            assert!(feature(added).is_some(), "{added:?}");
        }
        for toml_1_0 in [
            "a = \"\\\\e\\\\x\"",
            "a = 'x\\e'",
            "a = '''\\x'''",
            "a = [ 1,\n 2, ]",
            "a = { b = [\n 1,\n 2 ], c = { d = 3 } }",
            "a = { b = 1 } # c",
            "[t]\nb = 1\n",
        ] {
            assert_eq!(feature(toml_1_0), None, "{toml_1_0:?}");
        }
    }
}
