//! The rule-by-rule nom lexer that `lexer` replaced, kept unchanged as the oracle the
//! tests compare `lexer::lex` against: every token and error must be the same.

use nom::bytes::complete::{tag, take_while, take_while1};
use nom::character::complete::one_of;
use nom::combinator::{opt, recognize};
use nom::multi::many1;
use nom::sequence::{pair, preceded};
use nom::{IResult, Parser};

use super::{LexError, Token, TokenKind};
use crate::codes::{self, Code};
use crate::span::{FileId, Span};

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

fn is_identifier_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'\'' | b'-')
}

fn is_path_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-' | b'+')
}

fn is_uri_char(byte: u8) -> bool {
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

type Input<'a> = &'a [u8];

fn identifier(input: Input) -> IResult<Input, Input> {
    recognize(pair(
        take_while_first(is_identifier_start),
        take_while(is_identifier_char),
    ))
    .parse(input)
}

/// Exactly one byte satisfying `predicate`.
fn take_while_first(predicate: fn(u8) -> bool) -> impl Fn(Input) -> IResult<Input, Input> {
    move |input: Input| nom::bytes::complete::take_while_m_n(1, 1, predicate).parse(input)
}

fn digits(input: Input) -> IResult<Input, Input> {
    take_while1(|b: u8| b.is_ascii_digit()).parse(input)
}

/// `(([1-9][0-9]*\.[0-9]*)|(0?\.[0-9]+))([Ee][+-]?[0-9]+)?`
fn float(input: Input) -> IResult<Input, Input> {
    let exponent = recognize((one_of("eE"), opt(one_of("+-")), digits));
    let with_leading = recognize((
        take_while_first(|b| (b'1'..=b'9').contains(&b)),
        take_while(|b: u8| b.is_ascii_digit()),
        tag(&b"."[..]),
        take_while(|b: u8| b.is_ascii_digit()),
    ));
    let fraction_only = recognize((opt(tag(&b"0"[..])), tag(&b"."[..]), digits));
    recognize(pair(
        nom::branch::alt((with_leading, fraction_only)),
        opt(exponent),
    ))
    .parse(input)
}

/// `{PATH_CHAR}*(\/{PATH_CHAR}+)+\/?`
fn path(input: Input) -> IResult<Input, Input> {
    recognize((take_while(is_path_char), path_tail)).parse(input)
}

/// What follows a path's first run of path characters: `(\/{PATH_CHAR}+)+\/?`.
fn path_tail(input: Input) -> IResult<Input, Input> {
    recognize((
        many1(preceded(tag(&b"/"[..]), take_while1(is_path_char))),
        opt(tag(&b"/"[..])),
    ))
    .parse(input)
}

/// `{PATH_CHAR}*\/`
fn path_segment(input: Input) -> IResult<Input, Input> {
    recognize(pair(take_while(is_path_char), tag(&b"/"[..]))).parse(input)
}

/// A URI scheme's characters after its first letter: `[a-zA-Z0-9\+\-\.]`.
fn is_scheme_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'-' | b'.')
}

/// `\~(\/{PATH_CHAR}+)+\/?`
fn home_path(input: Input) -> IResult<Input, Input> {
    recognize((
        tag(&b"~"[..]),
        many1(preceded(tag(&b"/"[..]), take_while1(is_path_char))),
        opt(tag(&b"/"[..])),
    ))
    .parse(input)
}

/// `\<{PATH_CHAR}+(\/{PATH_CHAR}+)*\>`
fn search_path(input: Input) -> IResult<Input, Input> {
    recognize((
        tag(&b"<"[..]),
        take_while1(is_path_char),
        nom::multi::many0(preceded(tag(&b"/"[..]), take_while1(is_path_char))),
        tag(&b">"[..]),
    ))
    .parse(input)
}

/// `[a-zA-Z][a-zA-Z0-9\+\-\.]*\:{URI_CHAR}+`, given the length of the run of
/// scheme characters `input` starts with.
fn uri_match_length(input: Input, scheme_run: usize) -> usize {
    if !input.first().is_some_and(u8::is_ascii_alphabetic) || input.get(scheme_run) != Some(&b':') {
        return 0;
    }
    let rest = &input[scheme_run + 1..];
    match rest.iter().take_while(|b| is_uri_char(**b)).count() {
        0 => 0,
        length => scheme_run + 1 + length,
    }
}

fn matched_len(result: IResult<Input, Input>) -> usize {
    result.map(|(_, matched)| matched.len()).unwrap_or(0)
}

const KEYWORDS: &[(&str, TokenKind)] = &[
    ("if", TokenKind::If),
    ("then", TokenKind::Then),
    ("else", TokenKind::Else),
    ("assert", TokenKind::Assert),
    ("with", TokenKind::With),
    ("let", TokenKind::Let),
    ("in", TokenKind::In),
    ("rec", TokenKind::Rec),
    ("inherit", TokenKind::Inherit),
    ("or", TokenKind::Or),
];

const OPERATORS: &[(&[u8], TokenKind)] = &[
    (b"...", TokenKind::Ellipsis),
    (b"==", TokenKind::Eq),
    (b"!=", TokenKind::NotEq),
    (b"<=", TokenKind::LessEq),
    (b">=", TokenKind::GreaterEq),
    (b"&&", TokenKind::And),
    (b"||", TokenKind::OrOr),
    (b"->", TokenKind::Implies),
    (b"//", TokenKind::Update),
    (b"++", TokenKind::Concat),
];

/// Nix's `unescapeStr`: `\n`, `\r`, `\t` and `\X` for any other X; a raw CR or CRLF
/// becomes LF. Unlike Nix 2.8 a NUL byte does not cut the string short.
fn unescape(text: &[u8]) -> Vec<u8> {
    let mut result = Vec::with_capacity(text.len());
    let mut index = 0;
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

/// Splits `source` into tokens. Errors are collected; lexing always reaches the end.
pub fn lex(source: &[u8], file: FileId) -> (Vec<Token>, Vec<LexError>) {
    let mut lexer = Lexer {
        source,
        file,
        position: 0,
        modes: vec![Mode::Default],
        tokens: Vec::new(),
        errors: Vec::new(),
        path_run: Run::NONE,
        scheme_run: Run::NONE,
    };
    lexer.run();
    (lexer.tokens, lexer.errors)
}

struct Lexer<'a> {
    source: &'a [u8],
    file: FileId,
    position: usize,
    modes: Vec<Mode>,
    tokens: Vec<Token>,
    errors: Vec<LexError>,
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
    fn length_from(&mut self, source: &[u8], position: usize, class: fn(u8) -> bool) -> usize {
        if !(self.start..=self.end).contains(&position) {
            let length = source[position..]
                .iter()
                .take_while(|byte| class(**byte))
                .count();
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
    let identifier_length = matched_len(identifier(rest));
    for (word, kind) in KEYWORDS {
        if identifier_length == word.len() && rest.starts_with(word.as_bytes()) {
            candidates.consider(word.len(), || kind.clone());
        }
    }
    for (text, kind) in OPERATORS {
        if rest.starts_with(text) {
            candidates.consider(text.len(), || kind.clone());
        }
    }
    candidates.consider(identifier_length, || {
        TokenKind::Identifier(String::from_utf8_lossy(&rest[..identifier_length]).into_owned())
    });
    let integer_length = matched_len(digits(rest));
    candidates.consider(integer_length, || {
        let text = std::str::from_utf8(&rest[..integer_length]).unwrap_or("");
        TokenKind::Integer(text.parse::<i64>().ok())
    });
    let float_length = matched_len(float(rest));
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

    fn run(&mut self) {
        loop {
            let finished = match self.mode() {
                Mode::Default => self.default_token(),
                Mode::String => self.string_token(),
                Mode::Indented => self.indented_token(),
                Mode::InPath | Mode::InPathSlash => self.path_token(),
            };
            if finished {
                break;
            }
        }
        let end = self.source.len();
        self.tokens.push(Token {
            kind: TokenKind::Eof,
            span: Span::new(self.file, end, end),
        });
    }

    /// Lexes one token in the default mode; returns true at the end of input.
    fn default_token(&mut self) -> bool {
        self.skip_trivia();
        let rest = self.rest();
        let Some(&first) = rest.first() else {
            return true;
        };
        let mut candidates = Candidates::default();
        word_candidates(rest, &mut candidates);
        let starts = self.path_candidates(rest, &mut candidates);
        if rest.starts_with(b"${") {
            candidates.consider(2, || TokenKind::DollarCurly);
        }
        if rest.starts_with(b"''") {
            let spaces = rest[2..].iter().take_while(|b| **b == b' ').count();
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
        false
    }

    /// Skips whitespace and comments.
    fn skip_trivia(&mut self) {
        loop {
            let rest = self.rest();
            let spaces = rest
                .iter()
                .take_while(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
                .count();
            if spaces > 0 {
                self.position += spaces;
                continue;
            }
            if rest.first() == Some(&b'#') {
                let length = rest
                    .iter()
                    .take_while(|b| **b != b'\n' && **b != b'\r')
                    .count();
                self.position += length;
                continue;
            }
            if rest.starts_with(b"/*") {
                match find(&rest[2..], b"*/") {
                    Some(end) => self.position += end + 4,
                    None => {
                        let start = self.position;
                        self.position = self.source.len();
                        self.error(
                            codes::UNTERMINATED_COMMENT,
                            "unterminated comment",
                            start,
                            start + 2,
                            "close the comment with `*/`",
                        );
                    }
                }
                continue;
            }
            break;
        }
    }

    /// Paths, home paths, search paths and URIs at the current position, each
    /// scanned from the runs of characters they start with (see [`Run`]). Returns
    /// how an interpolated path would start, for [`Lexer::push_longest`].
    fn path_candidates(&mut self, rest: &'a [u8], candidates: &mut Candidates) -> PathStarts {
        let path_run = self
            .path_run
            .length_from(self.source, self.position, is_path_char);
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
                TokenKind::Path(String::from_utf8_lossy(&rest[..segment_length]).into_owned())
            });
        }
        if starts.home {
            candidates.consider(4, || TokenKind::HomePath("~/".to_string()));
        }
        let path_length = match matched_len(path_tail(&rest[path_run..])) {
            0 => 0,
            tail => path_run + tail,
        };
        candidates.consider(path_length, || {
            TokenKind::Path(String::from_utf8_lossy(&rest[..path_length]).into_owned())
        });
        let home_length = matched_len(home_path(rest));
        candidates.consider(home_length, || {
            TokenKind::HomePath(String::from_utf8_lossy(&rest[..home_length]).into_owned())
        });
        let search_length = matched_len(search_path(rest));
        candidates.consider(search_length, || {
            TokenKind::SearchPath(String::from_utf8_lossy(&rest[..search_length]).into_owned())
        });
        let uri_length = uri_match_length(rest, scheme_run);
        candidates.consider(uri_length, || {
            TokenKind::Uri(String::from_utf8_lossy(&rest[..uri_length]).into_owned())
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
            b'{' => TokenKind::LeftBrace,
            b'}' => TokenKind::RightBrace,
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
            b'"' => TokenKind::StringOpen,
            other => TokenKind::Unknown(other),
        };
        match kind {
            TokenKind::LeftBrace => self.modes.push(Mode::Default),
            TokenKind::RightBrace => self.pop_mode(),
            TokenKind::StringOpen => self.modes.push(Mode::String),
            _ => {}
        }
        // an unknown byte that starts a UTF-8 sequence is reported as one token
        let length = if let TokenKind::Unknown(byte) = kind {
            utf8_sequence_length(byte).min(rest_length)
        } else {
            1
        };
        self.push(kind, length);
    }

    fn path_token(&mut self) -> bool {
        let rest = self.rest();
        if rest.starts_with(b"${") {
            self.set_mode(Mode::InPath);
            self.modes.push(Mode::Default);
            self.push(TokenKind::DollarCurly, 2);
            return false;
        }
        let chunk_length = matched_len(path(rest))
            .max(matched_len(path_segment(rest)))
            .max(rest.iter().take_while(|b| is_path_char(**b)).count());
        if chunk_length > 0 {
            let text = String::from_utf8_lossy(&rest[..chunk_length]).into_owned();
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
                Some(_) => length += 1,
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
                Some(_) => unit_length += 1,
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
            .find(|token| matches!(token.kind, TokenKind::StringOpen | TokenKind::IndentedOpen))
            .map(|token| token.span)
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
