//! Tokens of the Nix expression syntax, recognised the way Nix's flex lexer recognises
//! them: longest match wins, ties go to the earlier rule, and strings, indented strings
//! and paths are lexer modes kept on a stack. Never panics: bytes that start no token
//! become `Unknown` tokens for the parser to report. Each token is dispatched on its
//! first byte; only where a longer rule could still match (a `/` or `:` after the run
//! of path characters, a digit after `.`, ...) are all the rules tried, so the tokens
//! are those of the rule-by-rule lexer in `reference`, which the tests compare against.

use crate::codes::{self, Code};
use crate::span::{FileId, Span};

#[cfg(test)]
mod reference;

#[derive(Clone, Debug, PartialEq)]
pub enum TokenKind {
    // keywords
    If,
    Then,
    Else,
    Assert,
    With,
    Let,
    In,
    Rec,
    Inherit,
    Or,
    Ellipsis,
    // operators
    Eq,
    NotEq,
    LessEq,
    GreaterEq,
    And,
    OrOr,
    Implies,
    Update,
    Concat,
    // values
    Identifier(String),
    Integer(Option<i64>),
    /// None when the literal is outside the range of normal doubles (Nix's
    /// `strtod` reports `ERANGE` for overflow and for subnormal results).
    Float(Option<f64>),
    /// A path literal's first part (`./a/b`, `a/`), with the text as written.
    Path(String),
    /// `~/...`, refused by the parser.
    HomePath(String),
    /// A literal chunk inside an interpolated path.
    PathChunk(String),
    PathEnd,
    SearchPath(String),
    Uri(String),
    // strings
    /// A whole `"..."` string with nothing to unescape and no `$` in it (its
    /// text between the quotes): most strings, lexed as one token instead of
    /// [`TokenKind::StringOpen`], a chunk and [`TokenKind::StringClose`]. The
    /// token's span is its opening quote, as `StringOpen`'s is (so what is said
    /// at it says what it said at that), and `end` is where the string ends.
    PlainString {
        text: Vec<u8>,
        end: u32,
    },
    StringOpen,
    StringChunk(Vec<u8>),
    StringClose,
    IndentedOpen,
    IndentedChunk {
        text: Vec<u8>,
        has_indentation: bool,
    },
    IndentedClose,
    DollarCurly,
    // punctuation
    LeftBrace,
    RightBrace,
    LeftBracket,
    RightBracket,
    LeftParen,
    RightParen,
    Colon,
    Semicolon,
    Comma,
    Dot,
    Assign,
    Question,
    At,
    Bang,
    Plus,
    Minus,
    Star,
    Slash,
    Less,
    Greater,
    /// A byte that starts no token.
    Unknown(u8),
    Eof,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub kind: TokenKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LexError {
    pub code: Code,
    pub message: String,
    pub span: Span,
    pub help: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Default,
    String,
    Indented,
    /// Inside a path, after a chunk that did not end in a slash.
    InPath,
    /// Inside a path, after a chunk that ended in a slash.
    InPathSlash,
}

fn is_identifier_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_'
}

const fn identifier_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'\'' | b'-')
}

const fn path_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-' | b'+')
}

/// A URI scheme's characters after its first letter: `[a-zA-Z0-9\+\-\.]`.
const fn scheme_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'-' | b'.')
}

const fn uri_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric()
        || matches!(
            byte,
            b'%' | b'/'
                | b'?'
                | b':'
                | b'@'
                | b'&'
                | b'='
                | b'+'
                | b'$'
                | b','
                | b'-'
                | b'_'
                | b'.'
                | b'!'
                | b'~'
                | b'*'
                | b'\''
        )
}

const IDENTIFIER_CHAR: u8 = 1;
const PATH_CHAR: u8 = 2;
const SCHEME_CHAR: u8 = 4;
const URI_CHAR: u8 = 8;
const DIGIT: u8 = 16;

/// Each byte's classes, one bit each, so that scanning a run costs a lookup a byte.
static CLASSES: [u8; 256] = {
    let mut table = [0; 256];
    let mut byte: u8 = 0;
    loop {
        let mut classes = 0;
        if identifier_char(byte) {
            classes |= IDENTIFIER_CHAR;
        }
        if path_char(byte) {
            classes |= PATH_CHAR;
        }
        if scheme_char(byte) {
            classes |= SCHEME_CHAR;
        }
        if uri_char(byte) {
            classes |= URI_CHAR;
        }
        if byte.is_ascii_digit() {
            classes |= DIGIT;
        }
        table[byte as usize] = classes;
        if byte == u8::MAX {
            break table;
        }
        byte += 1;
    }
};

fn is_identifier_char(byte: u8) -> bool {
    CLASSES[usize::from(byte)] & IDENTIFIER_CHAR != 0
}

fn is_path_char(byte: u8) -> bool {
    CLASSES[usize::from(byte)] & PATH_CHAR != 0
}

fn is_scheme_char(byte: u8) -> bool {
    CLASSES[usize::from(byte)] & SCHEME_CHAR != 0
}

fn is_uri_char(byte: u8) -> bool {
    CLASSES[usize::from(byte)] & URI_CHAR != 0
}

fn is_digit(byte: u8) -> bool {
    CLASSES[usize::from(byte)] & DIGIT != 0
}

/// The length of the run of `class` bytes `bytes` starts with.
fn run_length(bytes: &[u8], class: impl Fn(u8) -> bool) -> usize {
    bytes
        .iter()
        .position(|byte| !class(*byte))
        .unwrap_or(bytes.len())
}

/// `[a-zA-Z_][a-zA-Z0-9_'-]*`
fn identifier_length(rest: &[u8]) -> usize {
    match rest.first() {
        Some(&first) if is_identifier_start(first) => {
            1 + run_length(&rest[1..], is_identifier_char)
        }
        _ => 0,
    }
}

/// `(([1-9][0-9]*\.[0-9]*)|(0?\.[0-9]+))([Ee][+-]?[0-9]+)?`
fn float_length(rest: &[u8]) -> usize {
    let with_leading = match rest.first() {
        Some(b'1'..=b'9') => {
            let integer = 1 + run_length(&rest[1..], is_digit);
            if rest.get(integer) == Some(&b'.') {
                integer + 1 + run_length(&rest[integer + 1..], is_digit)
            } else {
                0
            }
        }
        _ => 0,
    };
    let mantissa = if with_leading > 0 {
        with_leading
    } else {
        let zero = usize::from(rest.first() == Some(&b'0'));
        if rest.get(zero) == Some(&b'.') {
            match run_length(&rest[zero + 1..], is_digit) {
                0 => 0,
                fraction => zero + 1 + fraction,
            }
        } else {
            0
        }
    };
    if mantissa == 0 {
        return 0;
    }
    mantissa + exponent_length(&rest[mantissa..])
}

/// `[Ee][+-]?[0-9]+`, or 0.
fn exponent_length(rest: &[u8]) -> usize {
    if !matches!(rest.first(), Some(b'e' | b'E')) {
        return 0;
    }
    let sign = usize::from(matches!(rest.get(1), Some(b'+' | b'-')));
    match run_length(&rest[1 + sign..], is_digit) {
        0 => 0,
        digits => 1 + sign + digits,
    }
}

/// What follows a path's first run of path characters: `(\/{PATH_CHAR}+)+\/?`, or 0.
fn path_tail_length(rest: &[u8]) -> usize {
    let mut length = 0;
    while rest.get(length) == Some(&b'/') {
        match run_length(&rest[length + 1..], is_path_char) {
            0 => break,
            part => length += 1 + part,
        }
    }
    if length > 0 && rest.get(length) == Some(&b'/') {
        length += 1;
    }
    length
}

/// `\~(\/{PATH_CHAR}+)+\/?`, or 0.
fn home_path_length(rest: &[u8]) -> usize {
    if rest.first() != Some(&b'~') {
        return 0;
    }
    match path_tail_length(&rest[1..]) {
        0 => 0,
        tail => 1 + tail,
    }
}

/// `\<{PATH_CHAR}+(\/{PATH_CHAR}+)*\>`, or 0.
fn search_path_length(rest: &[u8]) -> usize {
    if rest.first() != Some(&b'<') {
        return 0;
    }
    let mut length = match run_length(&rest[1..], is_path_char) {
        0 => return 0,
        first => 1 + first,
    };
    while rest.get(length) == Some(&b'/') {
        match run_length(&rest[length + 1..], is_path_char) {
            0 => break,
            part => length += 1 + part,
        }
    }
    if rest.get(length) == Some(&b'>') {
        length + 1
    } else {
        0
    }
}

/// `[a-zA-Z][a-zA-Z0-9\+\-\.]*\:{URI_CHAR}+`, given the length of the run of
/// scheme characters `input` starts with.
fn uri_match_length(input: &[u8], scheme_run: usize) -> usize {
    if !input.first().is_some_and(u8::is_ascii_alphabetic) || input.get(scheme_run) != Some(&b':') {
        return 0;
    }
    match run_length(&input[scheme_run + 1..], is_uri_char) {
        0 => 0,
        length => scheme_run + 1 + length,
    }
}

/// Where the whitespace and comments at `position` of `source` end; `Err` with
/// where a `/*` starts that is never closed.
pub(crate) fn trivia_end(source: &[u8], mut position: usize) -> Result<usize, usize> {
    loop {
        match source.get(position) {
            Some(b' ' | b'\t' | b'\r' | b'\n') => position += 1,
            Some(b'#') => {
                position += memchr::memchr2(b'\n', b'\r', &source[position..])
                    .unwrap_or(source.len() - position);
            }
            Some(b'/') if source.get(position + 1) == Some(&b'*') => {
                match find(&source[position + 2..], b"*/") {
                    Some(end) => position += end + 4,
                    None => return Err(position),
                }
            }
            _ => return Ok(position),
        }
    }
}

/// Whether `word` is a keyword (lexed as its own token, not an identifier).
pub(crate) fn is_keyword(word: &[u8]) -> bool {
    keyword(word).is_some()
}

/// The keyword spelled exactly `word`, if any.
fn keyword(word: &[u8]) -> Option<TokenKind> {
    Some(match word {
        b"if" => TokenKind::If,
        b"then" => TokenKind::Then,
        b"else" => TokenKind::Else,
        b"assert" => TokenKind::Assert,
        b"with" => TokenKind::With,
        b"let" => TokenKind::Let,
        b"in" => TokenKind::In,
        b"rec" => TokenKind::Rec,
        b"inherit" => TokenKind::Inherit,
        b"or" => TokenKind::Or,
        _ => return None,
    })
}

/// The operator `rest` starts with, if any, and its length. No two operators share a
/// first byte, so at most one matches.
fn operator(rest: &[u8]) -> Option<(usize, TokenKind)> {
    let second = *rest.get(1)?;
    let kind = match (rest[0], second) {
        (b'.', b'.') if rest.get(2) == Some(&b'.') => return Some((3, TokenKind::Ellipsis)),
        (b'=', b'=') => TokenKind::Eq,
        (b'!', b'=') => TokenKind::NotEq,
        (b'<', b'=') => TokenKind::LessEq,
        (b'>', b'=') => TokenKind::GreaterEq,
        (b'&', b'&') => TokenKind::And,
        (b'|', b'|') => TokenKind::OrOr,
        (b'-', b'>') => TokenKind::Implies,
        (b'/', b'/') => TokenKind::Update,
        (b'+', b'+') => TokenKind::Concat,
        _ => return None,
    };
    Some((2, kind))
}

/// The text of a token of ASCII bytes (identifiers, paths, URIs); other bytes never
/// reach here, but would become U+FFFD as they did.
fn token_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

fn integer_value(digits: &[u8]) -> Option<i64> {
    std::str::from_utf8(digits).ok()?.parse::<i64>().ok()
}

/// The length of the plain string at the start of `rest` (which starts with `"`),
/// quotes included: None when a `\\`, a `$` or a carriage return comes before the
/// closing quote (each means more than its byte), or there is none.
fn plain_string_length(rest: &[u8]) -> Option<usize> {
    let text = rest.get(1..)?;
    let end = memchr::memchr3(b'"', b'\\', b'$', text)?;
    (text[end] == b'"' && memchr::memchr(b'\r', &text[..end]).is_none()).then_some(end + 2)
}

/// The tokens of `tokens` with each plain string as the three tokens the string
/// rules make of it (an opening quote, its text if any, a closing quote): what
/// the rules of the language say, as the reference lexer says it.
fn spelled_out(tokens: Vec<Token>) -> Vec<Token> {
    let mut spelled = Vec::with_capacity(tokens.len());
    for token in tokens {
        let TokenKind::PlainString { text, end } = token.kind else {
            spelled.push(token);
            continue;
        };
        let Span { file, start, .. } = token.span;
        let (start, end) = (start as usize, end as usize);
        spelled.push(Token {
            kind: TokenKind::StringOpen,
            span: Span::new(file, start, start + 1),
        });
        if !text.is_empty() {
            spelled.push(Token {
                kind: TokenKind::StringChunk(text),
                span: Span::new(file, start + 1, end - 1),
            });
        }
        spelled.push(Token {
            kind: TokenKind::StringClose,
            span: Span::new(file, end - 1, end),
        });
    }
    spelled
}

/// Nix's `unescapeStr`: `\n`, `\r`, `\t` and `\X` for any other X; a raw CR or CRLF
/// becomes LF. Unlike Nix 2.8 a NUL byte does not cut the string short.
pub fn unescape(text: &[u8]) -> Vec<u8> {
    // most strings have nothing to unescape: copied at once
    let Some(first) = memchr::memchr2(b'\\', b'\r', text) else {
        return text.to_vec();
    };
    let mut result = Vec::with_capacity(text.len());
    result.extend_from_slice(&text[..first]);
    let mut index = first;
    while index < text.len() {
        let byte = text[index];
        index += 1;
        if byte == b'\\' {
            match text.get(index) {
                Some(b'n') => result.push(b'\n'),
                Some(b'r') => result.push(b'\r'),
                Some(b't') => result.push(b'\t'),
                Some(other) => result.push(*other),
                None => {}
            }
            index += 1;
        } else if byte == b'\r' {
            result.push(b'\n');
            if text.get(index) == Some(&b'\n') {
                index += 1;
            }
        } else {
            result.push(byte);
        }
    }
    result
}

/// Beyond this many bytes, the token vector of a whole file is made with room for
/// the tokens of a typical text of that length at once (smaller files grow it as
/// they go).
const LARGE_SOURCE: usize = 64 * 1024;

/// Splits `source` into tokens. Errors are collected; lexing always reaches the end.
pub fn lex(source: &[u8], file: FileId) -> (Vec<Token>, Vec<LexError>) {
    let lexer = Lexer::whole(source, file);
    (spelled_out(lexer.tokens), lexer.errors)
}

/// The lexer's state between tokens. [`lex`] runs it to the end at once; the
/// parser runs it a window of tokens at a time ([`Lexer::fill`]), taking the
/// tokens it has read out of `tokens`, so a large file's tokens are never all held.
pub(crate) struct Lexer<'a> {
    pub(crate) source: &'a [u8],
    /// `source` as text, when it is UTF-8: identifiers are cut from it unchecked.
    text: Option<&'a str>,
    file: FileId,
    position: usize,
    modes: Vec<Mode>,
    /// The tokens lexed and not yet taken; the last is `Eof` once the input ended.
    pub(crate) tokens: Vec<Token>,
    pub(crate) errors: Vec<LexError>,
    /// The input ended and `Eof` was pushed.
    done: bool,
    /// The last run of path characters scanned (see [`Run`]).
    path_run: Run,
    /// The last run of URI scheme characters scanned.
    scheme_run: Run,
}

/// A run of bytes of one class, `start..end`, scanned once: every position inside it
/// shares its end. The candidates for a token all begin with such a run (`1+1+1`,
/// `a.b.c` are one run of path characters), and most tokens end inside it, so without
/// this each token would scan the rest of the run again: quadratic in its length.
#[derive(Clone, Copy)]
struct Run {
    start: usize,
    end: usize,
}

impl Run {
    const NONE: Run = Run { start: 1, end: 0 };

    /// The run's length from `position` on, scanning `source` only if `position` is
    /// outside the run scanned last.
    fn length_from(&mut self, source: &[u8], position: usize, class: impl Fn(u8) -> bool) -> usize {
        if !(self.start..=self.end).contains(&position) {
            let length = run_length(&source[position..], class);
            *self = Run {
                start: position,
                end: position + length,
            };
        }
        self.end - position
    }
}

/// The candidates for one token, in the lexer's rule order: the longest wins, ties
/// go to the first considered.
#[derive(Default)]
struct Candidates {
    best: Option<(usize, TokenKind)>,
}

impl Candidates {
    fn consider(&mut self, length: usize, kind: impl FnOnce() -> TokenKind) {
        if length > 0
            && self
                .best
                .as_ref()
                .is_none_or(|(best_length, _)| length > *best_length)
        {
            self.best = Some((length, kind()));
        }
    }
}

/// How an interpolated path would start here: the length of a segment followed by
/// `${`, and whether `~/${` does.
#[derive(Clone, Copy)]
struct PathStarts {
    segment: Option<usize>,
    home: bool,
}

/// Keywords, operators, identifiers, integers and floats at the start of `rest`.
fn word_candidates(rest: &[u8], candidates: &mut Candidates) {
    let identifier_length = identifier_length(rest);
    if let Some(kind) = keyword(&rest[..identifier_length]) {
        candidates.consider(identifier_length, || kind);
    }
    if let Some((length, kind)) = operator(rest) {
        candidates.consider(length, || kind);
    }
    candidates.consider(identifier_length, || {
        TokenKind::Identifier(token_text(&rest[..identifier_length]))
    });
    let integer_length = run_length(rest, is_digit);
    candidates.consider(integer_length, || {
        TokenKind::Integer(integer_value(&rest[..integer_length]))
    });
    let float_length = float_length(rest);
    candidates.consider(float_length, || {
        let text = std::str::from_utf8(&rest[..float_length]).unwrap_or("0");
        TokenKind::Float(float_value(text))
    });
}

impl<'a> Lexer<'a> {
    fn rest(&self) -> &'a [u8] {
        &self.source[self.position..]
    }

    fn push(&mut self, kind: TokenKind, length: usize) {
        let start = self.position;
        self.position += length;
        self.tokens.push(Token {
            kind,
            span: Span::new(self.file, start, self.position),
        });
    }

    fn error(&mut self, code: Code, message: &str, start: usize, end: usize, help: &str) {
        if self.errors.len() >= crate::parser::MAX_ERRORS {
            return;
        }
        self.errors.push(LexError {
            code,
            message: message.to_string(),
            span: Span::new(self.file, start, end),
            help: help.to_string(),
        });
    }

    fn mode(&self) -> Mode {
        self.modes.last().copied().unwrap_or(Mode::Default)
    }

    fn pop_mode(&mut self) {
        if self.modes.len() > 1 {
            self.modes.pop();
        }
    }

    fn set_mode(&mut self, mode: Mode) {
        self.pop_mode();
        self.modes.push(mode);
    }

    pub(crate) fn new(source: &'a [u8], file: FileId) -> Lexer<'a> {
        Lexer {
            source,
            text: std::str::from_utf8(source).ok(),
            file,
            position: 0,
            modes: vec![Mode::Default],
            tokens: Vec::new(),
            errors: Vec::new(),
            done: false,
            path_run: Run::NONE,
            scheme_run: Run::NONE,
        }
    }

    /// A lexer whose first token starts at `position` of `source` (spans are of
    /// `source`): a value of a file lexed alone. Identifiers are checked as UTF-8
    /// one by one, not the whole source at once.
    pub(crate) fn starting_at(source: &'a [u8], file: FileId, position: usize) -> Lexer<'a> {
        let mut lexer = Lexer::new(&[], file);
        lexer.source = source;
        lexer.position = position.min(source.len());
        lexer
    }

    /// A lexer run to the end of `source`.
    pub(crate) fn whole(source: &'a [u8], file: FileId) -> Lexer<'a> {
        let mut lexer = Lexer::new(source, file);
        // a large file (a generated inventory) would otherwise copy its tokens over
        // and over as the vector doubles; about one token per eight bytes
        if source.len() > LARGE_SOURCE {
            lexer.tokens.reserve(source.len() / 8);
        }
        lexer.fill(usize::MAX);
        lexer
    }

    /// Whether the input ended (the last of `tokens` is `Eof`).
    pub(crate) fn done(&self) -> bool {
        self.done
    }

    /// Lexes until `tokens` holds at least `count` tokens or the input ended (then
    /// `Eof` is pushed, once).
    pub(crate) fn fill(&mut self, count: usize) {
        while !self.done && self.tokens.len() < count {
            let finished = match self.mode() {
                Mode::Default => self.default_token(),
                Mode::String => self.string_token(),
                Mode::Indented => self.indented_token(),
                Mode::InPath | Mode::InPathSlash => self.path_token(),
            };
            if finished {
                let end = self.source.len();
                self.tokens.push(Token {
                    kind: TokenKind::Eof,
                    span: Span::new(self.file, end, end),
                });
                self.done = true;
            }
        }
    }

    /// The length of the run of path characters at the current position.
    fn path_run(&mut self) -> usize {
        self.path_run
            .length_from(self.source, self.position, is_path_char)
    }

    /// Lexes one token in the default mode; returns true at the end of input. The
    /// first byte decides which rules can match; where more than one longer rule
    /// could, [`Lexer::longest_token`] tries them all.
    fn default_token(&mut self) -> bool {
        self.skip_trivia();
        let rest = self.rest();
        let Some(&first) = rest.first() else {
            return true;
        };
        let second = rest.get(1).copied();
        match first {
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => self.word_token(rest),
            b'0'..=b'9' => self.number_token(rest),
            b'.' => {
                // `.5` is a float, `./a` and `.../a` paths
                if second.is_some_and(is_digit) || rest.get(self.path_run()) == Some(&b'/') {
                    self.longest_token(rest, first);
                } else if rest.starts_with(b"...") {
                    self.push(TokenKind::Ellipsis, 3);
                } else {
                    self.push(TokenKind::Dot, 1);
                }
            }
            b'-' | b'+' => {
                // `-/a`, `+a/b` are paths
                if rest.get(self.path_run()) == Some(&b'/') {
                    self.longest_token(rest, first);
                } else if first == b'-' && second == Some(b'>') {
                    self.push(TokenKind::Implies, 2);
                } else if first == b'+' && second == Some(b'+') {
                    self.push(TokenKind::Concat, 2);
                } else {
                    self.single_byte_token(first, rest.len());
                }
            }
            b'/' => match second {
                Some(b'/') => self.push(TokenKind::Update, 2),
                // `/a` is a path, `/${` starts an interpolated one
                Some(byte) if is_path_char(byte) || byte == b'$' => self.longest_token(rest, first),
                _ => self.single_byte_token(first, rest.len()),
            },
            b'<' => match second {
                // `<nixpkgs>`
                Some(byte) if is_path_char(byte) => self.longest_token(rest, first),
                Some(b'=') => self.push(TokenKind::LessEq, 2),
                _ => self.single_byte_token(first, rest.len()),
            },
            b'=' | b'!' | b'>' if second == Some(b'=') => {
                let kind = match first {
                    b'=' => TokenKind::Eq,
                    b'!' => TokenKind::NotEq,
                    _ => TokenKind::GreaterEq,
                };
                self.push(kind, 2);
            }
            b'&' if second == Some(b'&') => self.push(TokenKind::And, 2),
            b'|' if second == Some(b'|') => self.push(TokenKind::OrOr, 2),
            b'$' if second == Some(b'{') => {
                self.modes.push(Mode::Default);
                self.push(TokenKind::DollarCurly, 2);
            }
            b'{' => {
                self.modes.push(Mode::Default);
                self.push(TokenKind::LeftBrace, 1);
            }
            b'}' => {
                self.pop_mode();
                self.push(TokenKind::RightBrace, 1);
            }
            b'"' => match plain_string_length(rest) {
                Some(length) => {
                    let text = rest[1..length - 1].to_vec();
                    let start = self.position;
                    let end = u32::try_from(start + length).unwrap_or(u32::MAX);
                    self.push(TokenKind::PlainString { text, end }, 1);
                    self.position = start + length;
                }
                None => {
                    self.modes.push(Mode::String);
                    self.push(TokenKind::StringOpen, 1);
                }
            },
            b'[' => self.push(TokenKind::LeftBracket, 1),
            b']' => self.push(TokenKind::RightBracket, 1),
            b'(' => self.push(TokenKind::LeftParen, 1),
            b')' => self.push(TokenKind::RightParen, 1),
            b':' => self.push(TokenKind::Colon, 1),
            b';' => self.push(TokenKind::Semicolon, 1),
            b',' => self.push(TokenKind::Comma, 1),
            b'=' => self.push(TokenKind::Assign, 1),
            b'?' => self.push(TokenKind::Question, 1),
            b'@' => self.push(TokenKind::At, 1),
            b'!' => self.push(TokenKind::Bang, 1),
            b'*' => self.push(TokenKind::Star, 1),
            b'>' => self.push(TokenKind::Greater, 1),
            b'&' | b'|' | b'$' => self.push(TokenKind::Unknown(first), 1),
            _ => self.longest_token(rest, first),
        }
        false
    }

    /// A token starting with a letter or `_`: an identifier or keyword, unless the
    /// run of path characters is followed by `/` (a path) or `:` (maybe a URI).
    fn word_token(&mut self, rest: &'a [u8]) {
        let length = 1 + run_length(&rest[1..], is_identifier_char);
        match rest.get(length) {
            // the identifier's bytes are path characters up to the first `'`, and
            // scheme characters up to the first `'` or `_`: only after `.` or `+`
            // can either run go on past it
            Some(b'/' | b':') => return self.longest_token(rest, rest[0]),
            Some(b'.' | b'+') if matches!(rest.get(self.path_run()), Some(b'/' | b':')) => {
                return self.longest_token(rest, rest[0]);
            }
            _ => {}
        }
        let word = &rest[..length];
        let kind = keyword(word).unwrap_or_else(|| {
            let end = self.position + length;
            match self.text.and_then(|text| text.get(self.position..end)) {
                Some(text) => TokenKind::Identifier(text.to_owned()),
                None => TokenKind::Identifier(token_text(word)),
            }
        });
        self.push(kind, length);
    }

    /// A token starting with a digit: an integer, unless a `.` follows the digits (a
    /// float) or a `/` the run of path characters (a path).
    fn number_token(&mut self, rest: &'a [u8]) {
        let length = run_length(rest, is_digit);
        match rest.get(length) {
            Some(b'.' | b'/') => return self.longest_token(rest, rest[0]),
            Some(&byte) if is_path_char(byte) && rest.get(self.path_run()) == Some(&b'/') => {
                return self.longest_token(rest, rest[0]);
            }
            _ => {}
        }
        self.push(TokenKind::Integer(integer_value(&rest[..length])), length);
    }

    /// Tries every rule at the current position; the longest match wins, ties go to
    /// the earlier rule, and a byte no rule matches is a token of its own.
    fn longest_token(&mut self, rest: &'a [u8], first: u8) {
        let mut candidates = Candidates::default();
        word_candidates(rest, &mut candidates);
        let starts = self.path_candidates(rest, &mut candidates);
        if rest.starts_with(b"${") {
            candidates.consider(2, || TokenKind::DollarCurly);
        }
        if rest.starts_with(b"''") {
            let spaces = run_length(&rest[2..], |byte| byte == b' ');
            let length = if rest.get(2 + spaces) == Some(&b'\n') {
                3 + spaces
            } else {
                2
            };
            candidates.consider(length, || TokenKind::IndentedOpen);
        }
        match candidates.best {
            Some((length, kind)) => self.push_longest(length, kind, starts),
            None => self.single_byte_token(first, rest.len()),
        }
    }

    /// Skips whitespace and comments.
    fn skip_trivia(&mut self) {
        self.position = match trivia_end(self.source, self.position) {
            Ok(end) => end,
            Err(start) => {
                self.error(
                    codes::UNTERMINATED_COMMENT,
                    "unterminated comment",
                    start,
                    start + 2,
                    "close the comment with `*/`",
                );
                self.source.len()
            }
        };
    }

    /// Paths, home paths, search paths and URIs at the current position, each
    /// scanned from the runs of characters they start with (see [`Run`]). Returns
    /// how an interpolated path would start, for [`Lexer::push_longest`].
    fn path_candidates(&mut self, rest: &'a [u8], candidates: &mut Candidates) -> PathStarts {
        let path_run = self.path_run();
        let scheme_run = self
            .scheme_run
            .length_from(self.source, self.position, is_scheme_char);
        // a path segment followed by `${` starts an interpolated path
        let segment_length = if rest.get(path_run) == Some(&b'/') {
            path_run + 1
        } else {
            0
        };
        let starts = PathStarts {
            segment: (segment_length > 0 && rest[segment_length..].starts_with(b"${"))
                .then_some(segment_length),
            home: rest.starts_with(b"~/") && rest[2..].starts_with(b"${"),
        };
        if let Some(segment_length) = starts.segment {
            candidates.consider(segment_length + 2, || {
                TokenKind::Path(token_text(&rest[..segment_length]))
            });
        }
        if starts.home {
            candidates.consider(4, || TokenKind::HomePath("~/".to_string()));
        }
        let path_length = match path_tail_length(&rest[path_run..]) {
            0 => 0,
            tail => path_run + tail,
        };
        candidates.consider(path_length, || {
            TokenKind::Path(token_text(&rest[..path_length]))
        });
        let home_length = home_path_length(rest);
        candidates.consider(home_length, || {
            TokenKind::HomePath(token_text(&rest[..home_length]))
        });
        let search_length = search_path_length(rest);
        candidates.consider(search_length, || {
            TokenKind::SearchPath(token_text(&rest[..search_length]))
        });
        let uri_length = uri_match_length(rest, scheme_run);
        candidates.consider(uri_length, || {
            TokenKind::Uri(token_text(&rest[..uri_length]))
        });
        starts
    }

    /// Pushes the longest candidate, entering the mode it opens.
    fn push_longest(&mut self, length: usize, kind: TokenKind, starts: PathStarts) {
        match &kind {
            TokenKind::DollarCurly => {
                self.modes.push(Mode::Default);
                self.push(kind, length);
            }
            TokenKind::IndentedOpen => {
                self.modes.push(Mode::Indented);
                self.push(kind, length);
            }
            TokenKind::Path(text)
                if starts.segment.is_some_and(|segment| length == segment + 2) =>
            {
                // interpolated path: the segment is the first part, `${` comes next
                let text_length = text.len();
                self.push(kind, text_length);
                self.modes.push(Mode::InPathSlash);
            }
            TokenKind::HomePath(_) if starts.home && length == 4 => {
                self.push(kind, 2);
                self.modes.push(Mode::InPathSlash);
            }
            TokenKind::Path(text) | TokenKind::HomePath(text) => {
                let mode = if text.ends_with('/') {
                    Mode::InPathSlash
                } else {
                    Mode::InPath
                };
                self.push(kind, length);
                self.modes.push(mode);
            }
            _ => self.push(kind, length),
        }
    }

    /// A token of one byte (or one unknown UTF-8 sequence), when no longer one matched.
    fn single_byte_token(&mut self, first: u8, rest_length: usize) {
        let kind = match first {
            b'{' => {
                self.modes.push(Mode::Default);
                TokenKind::LeftBrace
            }
            b'}' => {
                self.pop_mode();
                TokenKind::RightBrace
            }
            b'"' => {
                self.modes.push(Mode::String);
                TokenKind::StringOpen
            }
            b'[' => TokenKind::LeftBracket,
            b']' => TokenKind::RightBracket,
            b'(' => TokenKind::LeftParen,
            b')' => TokenKind::RightParen,
            b':' => TokenKind::Colon,
            b';' => TokenKind::Semicolon,
            b',' => TokenKind::Comma,
            b'.' => TokenKind::Dot,
            b'=' => TokenKind::Assign,
            b'?' => TokenKind::Question,
            b'@' => TokenKind::At,
            b'!' => TokenKind::Bang,
            b'+' => TokenKind::Plus,
            b'-' => TokenKind::Minus,
            b'*' => TokenKind::Star,
            b'/' => TokenKind::Slash,
            b'<' => TokenKind::Less,
            b'>' => TokenKind::Greater,
            other => {
                // an unknown byte that starts a UTF-8 sequence is reported as one token
                let length = utf8_sequence_length(other).min(rest_length);
                self.push(TokenKind::Unknown(other), length);
                return;
            }
        };
        self.push(kind, 1);
    }

    fn path_token(&mut self) -> bool {
        let rest = self.rest();
        if rest.starts_with(b"${") {
            self.set_mode(Mode::InPath);
            self.modes.push(Mode::Default);
            self.push(TokenKind::DollarCurly, 2);
            return false;
        }
        // the longest of a path, a segment ending in `/` and a run of path characters
        let path_run = run_length(rest, is_path_char);
        let chunk_length = match path_tail_length(&rest[path_run..]) {
            0 if rest.get(path_run) == Some(&b'/') => path_run + 1,
            0 => path_run,
            tail => path_run + tail,
        };
        if chunk_length > 0 {
            let text = token_text(&rest[..chunk_length]);
            let mode = if text.ends_with('/') {
                Mode::InPathSlash
            } else {
                Mode::InPath
            };
            self.set_mode(mode);
            self.push(TokenKind::PathChunk(text), chunk_length);
            return false;
        }
        if self.mode() == Mode::InPathSlash {
            let start = self.position.saturating_sub(1);
            self.error(
                codes::PATH_TRAILING_SLASH,
                "path has a trailing slash",
                start,
                self.position,
                "remove the trailing `/`",
            );
        }
        self.pop_mode();
        let position = self.position;
        self.tokens.push(Token {
            kind: TokenKind::PathEnd,
            span: Span::new(self.file, position, position),
        });
        false
    }

    fn string_token(&mut self) -> bool {
        let rest = self.rest();
        if rest.is_empty() {
            self.unterminated(b'"');
            return true;
        }
        // units: [^$"\\] | \$[^{"\\] | \\ANY | \$\\ANY
        let mut length = 0;
        loop {
            match rest.get(length) {
                None | Some(b'"') => break,
                Some(b'\\') => {
                    if length + 1 < rest.len() {
                        length += 2;
                    } else {
                        break;
                    }
                }
                Some(b'$') => match rest.get(length + 1) {
                    None | Some(b'{') | Some(b'"') => break,
                    Some(b'\\') => {
                        if length + 2 < rest.len() {
                            length += 3;
                        } else {
                            break;
                        }
                    }
                    Some(_) => length += 2,
                },
                // an ordinary byte: on to the next that is not
                Some(_) => {
                    length += 1;
                    length += memchr::memchr3(b'"', b'\\', b'$', &rest[length..])
                        .unwrap_or(rest.len() - length);
                }
            }
        }
        if rest.get(length) == Some(&b'$') && rest.get(length + 1) == Some(&b'"') {
            length += 1;
        }
        if length > 0 {
            let text = unescape(&rest[..length]);
            self.push(TokenKind::StringChunk(text), length);
            return false;
        }
        if rest.starts_with(b"${") {
            self.modes.push(Mode::Default);
            self.push(TokenKind::DollarCurly, 2);
            return false;
        }
        if rest.starts_with(b"\"") {
            self.pop_mode();
            self.push(TokenKind::StringClose, 1);
            return false;
        }
        // `$`, `\` or `$\` at the end of input
        self.position = self.source.len();
        self.unterminated(b'"');
        true
    }

    fn indented_token(&mut self) -> bool {
        let rest = self.rest();
        if rest.is_empty() {
            self.unterminated(b'\'');
            return true;
        }
        // rule a: ([^$']|\$[^{']|'[^'$])+
        let mut unit_length = 0;
        loop {
            match rest.get(unit_length) {
                None => break,
                Some(b'$') => match rest.get(unit_length + 1) {
                    None | Some(b'{') | Some(b'\'') => break,
                    Some(_) => unit_length += 2,
                },
                Some(b'\'') => match rest.get(unit_length + 1) {
                    None | Some(b'\'') | Some(b'$') => break,
                    Some(_) => unit_length += 2,
                },
                // an ordinary byte: on to the next that is not
                Some(_) => {
                    unit_length += 1;
                    unit_length += memchr::memchr2(b'$', b'\'', &rest[unit_length..])
                        .unwrap_or(rest.len() - unit_length);
                }
            }
        }
        // the other rules, in order; the longest wins and ties go to the earlier rule
        let mut best: (usize, u8) = (unit_length, 0);
        let mut consider = |length: usize, rule: u8| {
            if length > best.0 {
                best = (length, rule);
            }
        };
        if rest.starts_with(b"''$") {
            consider(3, 1);
        }
        if rest.starts_with(b"$") {
            consider(1, 2);
        }
        if rest.starts_with(b"'''") {
            consider(3, 3);
        }
        if rest.starts_with(b"''\\") && rest.len() >= 4 {
            consider(4, 4);
        }
        if rest.starts_with(b"${") {
            consider(2, 5);
        }
        if rest.starts_with(b"''") {
            consider(2, 6);
        }
        if rest.starts_with(b"'") {
            consider(1, 7);
        }
        let (length, rule) = best;
        if length == 0 {
            // `''\` at the very end of input
            self.position = self.source.len();
            self.unterminated(b'\'');
            return true;
        }
        match rule {
            0 => self.push(
                TokenKind::IndentedChunk {
                    text: rest[..length].to_vec(),
                    has_indentation: true,
                },
                length,
            ),
            1 | 2 => self.push(
                TokenKind::IndentedChunk {
                    text: b"$".to_vec(),
                    has_indentation: false,
                },
                length,
            ),
            3 => self.push(
                TokenKind::IndentedChunk {
                    text: b"''".to_vec(),
                    has_indentation: false,
                },
                length,
            ),
            4 => {
                let text = unescape(&rest[2..4]);
                self.push(
                    TokenKind::IndentedChunk {
                        text,
                        has_indentation: false,
                    },
                    length,
                )
            }
            5 => {
                self.modes.push(Mode::Default);
                self.push(TokenKind::DollarCurly, 2);
            }
            6 => {
                self.pop_mode();
                self.push(TokenKind::IndentedClose, 2);
            }
            _ => self.push(
                TokenKind::IndentedChunk {
                    text: b"'".to_vec(),
                    has_indentation: false,
                },
                1,
            ),
        }
        false
    }

    fn unterminated(&mut self, quote: u8) {
        // report at the opening quote of the innermost unterminated string
        let opening = self
            .tokens
            .iter()
            .rev()
            .find_map(|token| match token.kind {
                // a plain string's span is its opening quote
                TokenKind::StringOpen | TokenKind::IndentedOpen | TokenKind::PlainString { .. } => {
                    Some(token.span)
                }
                _ => None,
            })
            .unwrap_or(Span::new(self.file, self.position, self.position));
        let help = if quote == b'"' {
            "close the string with `\"`"
        } else {
            "close the indented string with `''`"
        };
        self.errors.push(LexError {
            code: codes::UNTERMINATED_STRING,
            message: "unterminated string".to_string(),
            span: opening,
            help: help.to_string(),
        });
        self.position = self.source.len();
    }
}

/// A float literal's value, or None where C's `strtod` reports a range error: an
/// infinite result, or a non-zero literal whose value is subnormal or zero.
fn float_value(text: &str) -> Option<f64> {
    let value = text.parse::<f64>().ok()?;
    let mantissa = text.split(['e', 'E']).next().unwrap_or("");
    let non_zero_literal = mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
    if value.is_infinite() || (non_zero_literal && !value.is_normal()) {
        return None;
    }
    Some(value)
}

fn utf8_sequence_length(first: u8) -> usize {
    match first {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Nix's `unescapeStr` one byte at a time, without a fast path.
    fn unescape_bytewise(text: &[u8]) -> Vec<u8> {
        let mut result = Vec::new();
        let mut bytes = text.iter().copied().peekable();
        while let Some(byte) = bytes.next() {
            match byte {
                b'\\' => match bytes.next() {
                    Some(b'n') => result.push(b'\n'),
                    Some(b'r') => result.push(b'\r'),
                    Some(b't') => result.push(b'\t'),
                    Some(other) => result.push(other),
                    None => {}
                },
                b'\r' => {
                    result.push(b'\n');
                    if bytes.peek() == Some(&b'\n') {
                        bytes.next();
                    }
                }
                other => result.push(other),
            }
        }
        result
    }

    proptest! {
        #[test]
        fn unescape_is_the_bytewise_unescape(
            text in proptest::collection::vec(
                prop_oneof![Just(b'\\'), Just(b'\r'), Just(b'\n'), Just(b'n'), Just(b'a')],
                0..24,
            )
        ) {
            prop_assert_eq!(unescape(&text), unescape_bytewise(&text));
        }
    }

    /// A string with nothing to unescape and no `$` is one token; any other is
    /// the three (or more) the string rules make; `lex` spells plain ones out.
    #[test]
    fn plain_strings_are_one_token() {
        let source = b"[ \"abc\" \"\" \"a$b\" \"a\\\"b\" \"x${y}\" \"c\rd\" ]";
        let lexer = Lexer::whole(source, FileId(0));
        assert!(lexer.errors.is_empty(), "{:?}", lexer.errors);
        let lexed: Vec<&TokenKind> = lexer.tokens.iter().map(|token| &token.kind).collect();
        assert_eq!(
            lexed[1],
            &TokenKind::PlainString {
                text: b"abc".to_vec(),
                end: 7
            }
        );
        // the opening quote, as the three tokens' first
        assert_eq!(lexer.tokens[1].span, Span::new(FileId(0), 2, 3));
        assert_eq!(
            lexed[2],
            &TokenKind::PlainString {
                text: Vec::new(),
                end: 10
            }
        );
        let plain = lexed
            .iter()
            .filter(|kind| matches!(kind, TokenKind::PlainString { .. }))
            .count();
        assert_eq!(plain, 2, "{lexed:?}");
        let spelled = kinds("[ \"abc\" \"\" ]");
        assert_eq!(
            spelled,
            vec![
                TokenKind::LeftBracket,
                TokenKind::StringOpen,
                TokenKind::StringChunk(b"abc".to_vec()),
                TokenKind::StringClose,
                TokenKind::StringOpen,
                TokenKind::StringClose,
                TokenKind::RightBracket,
                TokenKind::Eof
            ]
        );
    }

    fn kinds(source: &str) -> Vec<TokenKind> {
        let (tokens, errors) = lex(source.as_bytes(), FileId(0));
        assert!(errors.is_empty(), "{errors:?}");
        tokens.into_iter().map(|token| token.kind).collect()
    }

    #[test]
    fn longest_match_decides_between_paths_floats_and_uris() {
        assert_eq!(
            kinds("1.0/3"),
            vec![
                TokenKind::Path("1.0/3".into()),
                TokenKind::PathEnd,
                TokenKind::Eof
            ]
        );
        assert_eq!(
            kinds("x:x"),
            vec![TokenKind::Uri("x:x".into()), TokenKind::Eof]
        );
        assert_eq!(
            kinds("a-b"),
            vec![TokenKind::Identifier("a-b".into()), TokenKind::Eof]
        );
        assert_eq!(
            kinds("01.5"),
            vec![
                TokenKind::Integer(Some(1)),
                TokenKind::Float(Some(0.5)),
                TokenKind::Eof
            ]
        );
        assert_eq!(kinds("iffy")[0], TokenKind::Identifier("iffy".into()));
        assert_eq!(kinds("if")[0], TokenKind::If);
    }

    #[test]
    fn strings_keep_dollar_dollar_and_escapes() {
        assert_eq!(
            kinds(r#""a$${x}\${y}$""#),
            vec![
                TokenKind::StringOpen,
                TokenKind::StringChunk(b"a$${x}${y}$".to_vec()),
                TokenKind::StringClose,
                TokenKind::Eof
            ]
        );
    }

    #[test]
    fn interpolated_path_tokens() {
        assert_eq!(
            kinds("./a/${b}.nix"),
            vec![
                TokenKind::Path("./a/".into()),
                TokenKind::DollarCurly,
                TokenKind::Identifier("b".into()),
                TokenKind::RightBrace,
                TokenKind::PathChunk(".nix".into()),
                TokenKind::PathEnd,
                TokenKind::Eof
            ]
        );
    }

    /// `lex` and the rule-by-rule reference lexer agree on `source`.
    fn same_as_reference(source: &[u8]) -> Result<(), String> {
        let fast = lex(source, FileId(3));
        let reference = reference::lex(source, FileId(3));
        if fast == reference {
            Ok(())
        } else {
            Err(format!(
                "lexers differ on {:?}:\n  lex:       {fast:?}\n  reference: {reference:?}",
                String::from_utf8_lossy(source)
            ))
        }
    }

    #[test]
    fn first_byte_dispatch_agrees_with_every_rule_at_the_edges() {
        let cases: &[&str] = &[
            "a.b.c/d",
            "a.b",
            "a+b/c",
            "a'b/c",
            "a'.b/c",
            "a_b:c",
            "ab:c",
            "a.b:c",
            "a+:c",
            "a-b",
            "x:x",
            "x:",
            "x: x",
            "if",
            "iffy",
            "or",
            "or-x",
            "inherit'",
            "_x/y",
            "1.0/3",
            "01.5",
            "1.",
            "1.e3",
            "1.5e-3",
            "1e3",
            "0x1f",
            "12/3",
            "1+1/2",
            "1-1",
            "9223372036854775808",
            "1e400",
            ".5",
            "..",
            "...",
            ".../a",
            "../a",
            "./${x}",
            "-/a",
            "->",
            "--",
            "+a/b",
            "++",
            "/",
            "//",
            "/a",
            "/${x}",
            "/$",
            "<nixpkgs/a>",
            "<a",
            "<=",
            "<",
            "<a/>",
            "~/a",
            "~/${x}",
            "~",
            "${",
            "$",
            "''\n  x''",
            "''x''",
            "'",
            "&&",
            "&",
            "||",
            "|",
            "==",
            "=",
            "!=",
            "!",
            ">=",
            ">",
            "a/${b}/c/",
            "a/b/",
            "\"a${b}c\"",
            "# c\r\nx",
            "/* a */b",
            "/* a",
            "é",
            "\u{1F600}",
            "\\",
            "%",
            "\0",
        ];
        for case in cases {
            same_as_reference(case.as_bytes()).unwrap();
        }
        same_as_reference(&[0xC3]).unwrap();
        same_as_reference(&[b'a', 0xFF, b'/', b'b']).unwrap();
    }

    /// Fragments of Nix text the random inputs are made of: every rule's edge cases.
    const FRAGMENTS: &[&[u8]] = &[
        b"if",
        b"then",
        b"else",
        b"assert",
        b"with",
        b"let",
        b"in",
        b"rec",
        b"inherit",
        b"or",
        b"iffy",
        b"or-",
        b"in'",
        b"a",
        b"x",
        b"_",
        b"_a",
        b"a'",
        b"a-b",
        b"a'b-c",
        b"foo_bar",
        b"A1",
        b"0",
        b"1",
        b"01",
        b"12",
        b"1.",
        b"1.5",
        b".5",
        b"0.5",
        b"00.5",
        b"1e3",
        b"1.e3",
        b"1.5e-3",
        b"1.5E+",
        b"1e",
        b".5e3",
        b"0x",
        b"0x1f",
        b"9223372036854775807",
        b"9223372036854775808",
        b"1e400",
        b"1e-400",
        b"./a/b",
        b"a/b",
        b"a/",
        b"./",
        b"../x",
        b"/",
        b"//",
        b"/a",
        b"~/x",
        b"~",
        b"~/",
        b"~/${",
        b"<nixpkgs/x>",
        b"<nixpkgs>",
        b"<a/>",
        b"<",
        b"<a",
        b"http://x",
        b"x:x",
        b"a+b.c:d",
        b"git+ssh://h/p?q",
        b"x:",
        b"a_b:c",
        b"...",
        b"..",
        b".",
        b"==",
        b"!=",
        b"<=",
        b">=",
        b"&&",
        b"||",
        b"->",
        b"++",
        b"+",
        b"-",
        b"*",
        b"!",
        b"?",
        b"@",
        b":",
        b";",
        b",",
        b"=",
        b">",
        b"&",
        b"|",
        b"{",
        b"}",
        b"[",
        b"]",
        b"(",
        b")",
        b"${",
        b"$",
        b"''",
        b"'''",
        b"''$",
        b"''\\",
        b"'",
        b"\"",
        b"\\",
        b"\\n",
        b"$$",
        b"\"a\"",
        b"''\n",
        b"''  \n",
        b"#",
        b"# c\n",
        b"/*",
        b"*/",
        b"/* c */",
        b" ",
        b"\t",
        b"\n",
        b"\r",
        b"\r\n",
        "é".as_bytes(),
        "\u{1F600}".as_bytes(),
        &[0xC3],
        &[0xFF],
        &[0],
    ];

    fn fragment() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            8 => proptest::sample::select(FRAGMENTS).prop_map(<[u8]>::to_vec),
            1 => any::<u8>().prop_map(|byte| vec![byte]),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        /// Dispatching on the first byte gives exactly the tokens and errors of trying
        /// every rule at every position.
        #[test]
        fn lex_is_the_reference_lexer_on_nix_fragments(
            fragments in proptest::collection::vec(fragment(), 0..40)
        ) {
            let source = fragments.concat();
            if let Err(difference) = same_as_reference(&source) {
                prop_assert!(false, "{}", difference);
            }
        }

        #[test]
        fn lex_is_the_reference_lexer_on_random_bytes(
            source in proptest::collection::vec(any::<u8>(), 0..64)
        ) {
            if let Err(difference) = same_as_reference(&source) {
                prop_assert!(false, "{}", difference);
            }
        }
    }

    /// The parse of `source` lexed a few tokens at a time is the parse of all its
    /// tokens lexed first: the same tree and the same errors. (None from the
    /// windows: the lexer found errors, and the whole parse is the one made.)
    fn windows_parse_as_the_whole(source: &[u8]) -> Result<(), String> {
        let whole = crate::parser::parse_whole(source, FileId(0));
        for window in [1, 2, 5] {
            let Some(windowed) = crate::parser::parse_windowed(source, FileId(0), window) else {
                let (_, errors) = lex(source, FileId(0));
                if errors.is_empty() {
                    return Err(format!("window {window}: given up without a lexer error"));
                }
                continue;
            };
            if windowed.expr != whole.expr {
                return Err(format!(
                    "window {window}: the tree differs:\n{:?}\n{:?}",
                    windowed.expr, whole.expr
                ));
            }
            if format!("{:?}", windowed.errors) != format!("{:?}", whole.errors) {
                return Err(format!(
                    "window {window}: the errors differ:\n{:?}\n{:?}",
                    windowed.errors, whole.errors
                ));
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(5_000))]

        #[test]
        fn a_parse_in_windows_is_the_parse_of_all_tokens(
            fragments in proptest::collection::vec(fragment(), 0..40)
        ) {
            if let Err(difference) = windows_parse_as_the_whole(&fragments.concat()) {
                prop_assert!(false, "{}", difference);
            }
        }
    }

    /// Every `.nix` file of the repository parses in windows as it parses whole,
    /// and so does a third of it (cut mid-token, mid-string: the errors too).
    #[test]
    fn every_nix_file_parses_in_windows_as_it_parses_whole() {
        let files = crate::test_files::repository_nix_files();
        // some are nested as deeply as the parser allows: parsed on a stack sized
        // for that, as every parse of a file is
        crate::eval::run_with_stack(move || {
            for file in &files {
                let source = std::fs::read(file).unwrap();
                for start in [0, source.len() / 3] {
                    if let Err(difference) = windows_parse_as_the_whole(&source[start..]) {
                        panic!("{} from byte {start}: {difference}", file.display());
                    }
                }
            }
        })
        .expect("an evaluation thread");
    }

    /// Every `.nix` file of the repository (and of nixpkgs' lib, where it is vendored),
    /// whole and from a third of the way in, lexes as the reference lexes it.
    #[test]
    fn lex_is_the_reference_lexer_on_every_nix_file() {
        let mut files = crate::test_files::repository_nix_files();
        let nixpkgs = std::path::Path::new("/work/vendor/nixpkgs.lib");
        if nixpkgs.is_dir() {
            let before = files.len();
            crate::test_files::nix_files(nixpkgs, &mut files);
            assert!(
                files.len() > before,
                "no .nix files in {}",
                nixpkgs.display()
            );
        }
        for file in &files {
            let source = std::fs::read(file).unwrap();
            for start in [0, source.len() / 3] {
                if let Err(difference) = same_as_reference(&source[start..]) {
                    panic!("{} from byte {start}: {difference}", file.display());
                }
            }
        }
    }

    /// A file past [`LARGE_SOURCE`] (its token vector made with room up front)
    /// lexes as the reference lexes it: every repository file, one after another.
    #[test]
    fn a_large_file_lexes_as_the_reference_lexes_it() {
        let mut files = Vec::new();
        crate::test_files::nix_files(
            &crate::test_files::root().join("stdlib-modules"),
            &mut files,
        );
        let mut source = b"[\n".to_vec();
        while source.len() <= 2 * LARGE_SOURCE {
            for file in &files {
                source.extend_from_slice(b"(\n");
                source.extend_from_slice(&std::fs::read(file).unwrap());
                source.extend_from_slice(b"\n)\n");
            }
        }
        source.extend_from_slice(b"]\n");
        if let Err(difference) = same_as_reference(&source) {
            panic!("{difference}");
        }
    }

    #[test]
    fn unterminated_string_is_reported_at_its_opening() {
        let (_, errors) = lex(b"x: \"abc", FileId(0));
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].code, codes::UNTERMINATED_STRING);
        assert_eq!(errors[0].span.start, 3);
    }
}
