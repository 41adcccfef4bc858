//! Recursive-descent parser over the lexer's tokens, with the operator precedences of
//! Nix's grammar. It never fails outright: it returns a tree (with `Error` nodes where
//! it recovered) and every syntax error it found, so an editor can show them all.
//! Nesting is bounded so that no input can exhaust the stack. The lexer runs a
//! window of tokens ahead of the parser, so a large file's tokens are never all
//! held; a file the lexer finds errors in is parsed again from all its tokens, so
//! what is reported does not depend on the window.

use crate::codes;
use crate::diagnostic::Diagnostic;
use crate::lexer::{Lexer, Token, TokenKind};
use crate::span::{FileId, Span};
use crate::syntax::{
    AttrName, BinaryOp, Binding, Expr, ExprKind, Formal, Param, StringPart, StringParts, UnaryOp,
};

/// How deeply expressions may nest before the parser refuses (Nix itself gives up
/// at about 5,000 nested lists).
pub const MAX_NESTING: usize = 10_000;

/// How many levels [`Parser::expr`] passes through down to a literal: within this
/// many of [`MAX_NESTING`] a literal is not taken alone.
const LITERAL_LAYERS: usize = 8;

/// How many syntax errors one file reports; parsing stops at the last. Recovery
/// after thousands of errors shows nothing new, and a hostile file with an error
/// per byte would otherwise cost time per error in every stage that shows them.
pub const MAX_ERRORS: usize = 100;

/// The result of parsing one file.
#[derive(Debug)]
pub struct Parsed {
    pub expr: Expr,
    pub errors: Vec<Diagnostic>,
}

/// How many tokens the lexer runs ahead of the parser; the parser looks at most
/// [`LOOKAHEAD`] tokens past the current one.
const WINDOW: usize = 1024;
const LOOKAHEAD: usize = 3;

pub fn parse(source: &[u8], file: FileId) -> Parsed {
    parse_windowed(source, file, WINDOW).unwrap_or_else(|| parse_whole(source, file))
}

/// Parses the expression at `start..end` of `source` alone, as if it were a file
/// (spans are of `source`): a value of a file that was read without it (see
/// `skim`). Its errors are what parsing it alone finds.
pub fn parse_at(source: &[u8], file: FileId, start: usize, end: usize) -> Parsed {
    let source = &source[..end.min(source.len())];
    let mut lexer = Lexer::starting_at(source, file, start);
    lexer.fill(LOOKAHEAD + 1 + WINDOW);
    let mut parser = Parser::new(lexer, WINDOW, file);
    let expr = parser.file_expr();
    parser.skip_to_end();
    let lexed_with_errors = !parser.lexer.errors.is_empty();
    for error in std::mem::take(&mut parser.lexer.errors) {
        parser.errors.push(
            Diagnostic::error(error.code, error.message)
                .with_primary(error.span, "here")
                .with_help(error.help),
        );
    }
    parser.finish(expr, lexed_with_errors)
}

/// Whether the input ended inside `source`'s expression, so that more lines could
/// finish it: it has syntax errors and the first is where the input ends (a block,
/// string or comment not closed, an operator, `let` or `if` without what follows).
/// A mistake before the end (a stray `)`, two `=`) is not unfinished: more input
/// cannot mend it. Input of nothing but blanks and comments is not unfinished
/// either. `meshc repl` reads another line while this holds, as `nix repl` does.
pub fn ends_unfinished(source: &[u8]) -> bool {
    let file = FileId::default();
    let mut lexer = Lexer::whole(source, file);
    let lex_errors = std::mem::take(&mut lexer.errors);
    // a string or comment left open runs to the end of the input
    let open_to_the_end = |error: &crate::lexer::LexError| {
        error.code == codes::UNTERMINATED_STRING || error.code == codes::UNTERMINATED_COMMENT
    };
    if !lex_errors.iter().all(open_to_the_end) {
        return false;
    }
    if lexer
        .tokens
        .first()
        .is_none_or(|token| token.kind == TokenKind::Eof)
    {
        return !lex_errors.is_empty();
    }
    let mut parser = Parser::new(lexer, WINDOW, file);
    parser.file_expr();
    parser.first_error_at_end.unwrap_or(!lex_errors.is_empty())
}

/// Whether `source` holds nothing but blanks and comments (closed ones).
pub fn only_trivia(source: &[u8]) -> bool {
    let lexer = Lexer::whole(source, FileId::default());
    lexer.errors.is_empty()
        && lexer
            .tokens
            .first()
            .is_none_or(|token| token.kind == TokenKind::Eof)
}

/// Parses `source` lexed whole first: the lexer's errors come first and count
/// towards [`MAX_ERRORS`] from the start.
pub(crate) fn parse_whole(source: &[u8], file: FileId) -> Parsed {
    let mut lexer = Lexer::whole(source, file);
    let lex_errors = std::mem::take(&mut lexer.errors);
    let mut parser = Parser::new(lexer, WINDOW, file);
    for error in lex_errors {
        parser.errors.push(
            Diagnostic::error(error.code, error.message)
                .with_primary(error.span, "here")
                .with_help(error.help),
        );
    }
    let lexed_with_errors = !parser.errors.is_empty();
    let expr = parser.file_expr();
    parser.finish(expr, lexed_with_errors)
}

/// Parses `source` lexed `window` tokens at a time. None when the lexer finds an
/// error anywhere in the file: then [`parse_whole`] gives what is reported, so it
/// does not depend on the window.
pub(crate) fn parse_windowed(source: &[u8], file: FileId, window: usize) -> Option<Parsed> {
    // a window of no tokens would never move on
    let window = window.max(1);
    let mut lexer = Lexer::new(source, file);
    lexer.fill(LOOKAHEAD + 1 + window);
    let mut parser = Parser::new(lexer, window, file);
    let expr = parser.file_expr();
    // the rest of the file is lexed for its errors (parsing stopped at the first)
    parser.skip_to_end();
    if !parser.lexer.errors.is_empty() {
        return None;
    }
    Some(parser.finish(expr, false))
}

struct Parser<'a> {
    /// Its `tokens` are the window: `position` indexes it, and `base` tokens were
    /// taken out before it.
    lexer: Lexer<'a>,
    /// How many tokens the lexer runs ahead.
    window: usize,
    base: usize,
    position: usize,
    file: FileId,
    errors: Vec<Diagnostic>,
    depth: usize,
    abandoned: bool,
    /// The bindings and list elements being parsed, innermost last: each set or
    /// list moves its own out at its exact length when it closes (a `Vec` grown
    /// push by push keeps up to twice its length; a 2 MB inventory's tree is most
    /// of its parse's fresh memory).
    bindings: Vec<Binding>,
    items: Vec<Expr>,
    /// Blocks closed by a closer indented less than the line they were opened on
    /// (opener, closer): when a later block is found unclosed, the closer missing
    /// is usually one of these blocks' own, and the closer that closed it was its
    /// parent's.
    closed_shallower: Vec<(Span, Span)>,
    /// Where the parser stood when it said a block was not closed: what it says
    /// next at the same place follows from that.
    gave_up_at: Option<u32>,
    /// The `${` said not closed: a string the lexer found unterminated after one
    /// is its echo (the quote that ended the string around it opened a new one
    /// running to the end), not said as well.
    unclosed_interpolations: Vec<Span>,
    /// Whether the first syntax error was said where the input ended (see
    /// [`ends_unfinished`]); None before any.
    first_error_at_end: Option<bool>,
}

/// Left and right binding power of a binary operator, or None.
fn binding_power(kind: &TokenKind) -> Option<(u8, u8, BinaryOp)> {
    Some(match kind {
        TokenKind::Implies => (10, 10, BinaryOp::Implies),
        TokenKind::OrOr => (20, 21, BinaryOp::Or),
        TokenKind::And => (30, 31, BinaryOp::And),
        TokenKind::Eq => (40, 41, BinaryOp::Equal),
        TokenKind::NotEq => (40, 41, BinaryOp::NotEqual),
        TokenKind::Less => (50, 51, BinaryOp::Less),
        TokenKind::LessEq => (50, 51, BinaryOp::LessEqual),
        TokenKind::Greater => (50, 51, BinaryOp::Greater),
        TokenKind::GreaterEq => (50, 51, BinaryOp::GreaterEqual),
        TokenKind::Update => (60, 60, BinaryOp::Update),
        TokenKind::Plus => (80, 81, BinaryOp::Add),
        TokenKind::Minus => (80, 81, BinaryOp::Subtract),
        TokenKind::Star => (90, 91, BinaryOp::Multiply),
        TokenKind::Slash => (90, 91, BinaryOp::Divide),
        TokenKind::Concat => (100, 100, BinaryOp::Concat),
        _ => return None,
    })
}

const NOT_POWER: u8 = 70;
const HAS_ATTR_POWER: u8 = 110;
const NEGATE_POWER: u8 = 120;

fn is_non_associative(power: u8) -> bool {
    matches!(power, 40 | 50 | HAS_ATTR_POWER)
}

pub fn describe(kind: &TokenKind) -> String {
    match kind {
        TokenKind::If => "`if`".into(),
        TokenKind::Then => "`then`".into(),
        TokenKind::Else => "`else`".into(),
        TokenKind::Assert => "`assert`".into(),
        TokenKind::With => "`with`".into(),
        TokenKind::Let => "`let`".into(),
        TokenKind::In => "`in`".into(),
        TokenKind::Rec => "`rec`".into(),
        TokenKind::Inherit => "`inherit`".into(),
        TokenKind::Or => "`or`".into(),
        TokenKind::Ellipsis => "`...`".into(),
        TokenKind::Eq => "`==`".into(),
        TokenKind::NotEq => "`!=`".into(),
        TokenKind::LessEq => "`<=`".into(),
        TokenKind::GreaterEq => "`>=`".into(),
        TokenKind::And => "`&&`".into(),
        TokenKind::OrOr => "`||`".into(),
        TokenKind::Implies => "`->`".into(),
        TokenKind::Update => "`//`".into(),
        TokenKind::Concat => "`++`".into(),
        TokenKind::Identifier(name) => format!("identifier `{name}`"),
        TokenKind::Integer(_) => "integer".into(),
        TokenKind::Float(_) => "float".into(),
        TokenKind::Path(_) | TokenKind::PathChunk(_) => "path".into(),
        TokenKind::HomePath(_) => "home path".into(),
        TokenKind::PathEnd => "end of path".into(),
        TokenKind::SearchPath(_) => "search path".into(),
        TokenKind::Uri(_) => "URI".into(),
        // where a plain string is met unlooked-for, its opening quote is
        TokenKind::PlainString { .. } | TokenKind::StringOpen | TokenKind::StringClose => {
            "`\"`".into()
        }
        TokenKind::StringChunk(_) | TokenKind::IndentedChunk { .. } => "string".into(),
        TokenKind::IndentedOpen | TokenKind::IndentedClose => "`''`".into(),
        TokenKind::DollarCurly => "`${`".into(),
        TokenKind::LeftBrace => "`{`".into(),
        TokenKind::RightBrace => "`}`".into(),
        TokenKind::LeftBracket => "`[`".into(),
        TokenKind::RightBracket => "`]`".into(),
        TokenKind::LeftParen => "`(`".into(),
        TokenKind::RightParen => "`)`".into(),
        TokenKind::Colon => "`:`".into(),
        TokenKind::Semicolon => "`;`".into(),
        TokenKind::Comma => "`,`".into(),
        TokenKind::Dot => "`.`".into(),
        TokenKind::Assign => "`=`".into(),
        TokenKind::Question => "`?`".into(),
        TokenKind::At => "`@`".into(),
        TokenKind::Bang => "`!`".into(),
        TokenKind::Plus => "`+`".into(),
        TokenKind::Minus => "`-`".into(),
        TokenKind::Star => "`*`".into(),
        TokenKind::Slash => "`/`".into(),
        TokenKind::Less => "`<`".into(),
        TokenKind::Greater => "`>`".into(),
        TokenKind::Unknown(byte) if byte.is_ascii_graphic() => {
            format!("character `{}`", *byte as char)
        }
        TokenKind::Unknown(byte) => format!("byte 0x{byte:02x}"),
        TokenKind::Eof => "end of input".into(),
    }
}

impl<'a> Parser<'a> {
    fn new(lexer: Lexer<'a>, window: usize, file: FileId) -> Parser<'a> {
        Parser {
            lexer,
            window,
            base: 0,
            position: 0,
            file,
            errors: Vec::new(),
            depth: 0,
            abandoned: false,
            bindings: Vec::new(),
            items: Vec::new(),
            closed_shallower: Vec::new(),
            gave_up_at: None,
            first_error_at_end: None,
            unclosed_interpolations: Vec::new(),
        }
    }

    /// The file's one expression, with an error for anything after it.
    fn file_expr(&mut self) -> Expr {
        let expr = self.expr();
        if !self.at(&TokenKind::Eof) && !self.abandoned {
            let token = self.current().clone();
            self.error_at(
                token.span,
                format!("unexpected {}", describe(&token.kind)),
                "the expression ended before this; remove it or join the two with an operator",
            );
        }
        expr
    }

    /// The parse and its errors; after lexer errors (`lexed_with_errors`), a
    /// syntax error at the spot of an earlier error is dropped: a lexer error
    /// usually causes one there, and the lexer's says more.
    fn finish(self, expr: Expr, lexed_with_errors: bool) -> Parsed {
        let mut errors = self.errors;
        if let Some(first) = self.unclosed_interpolations.first() {
            errors.retain(|error| {
                error.code != codes::UNTERMINATED_STRING
                    || error.span().is_none_or(|span| span.start < first.start)
            });
        }
        if lexed_with_errors {
            let mut seen_spans: Vec<Span> = Vec::new();
            errors.retain(|error| {
                let span = error.span().unwrap_or_default();
                let duplicate = seen_spans.iter().any(|seen| {
                    seen.start <= span.start && span.start <= seen.end.max(seen.start + 1)
                });
                seen_spans.push(span);
                !duplicate || error.code != codes::SYNTAX_ERROR
            });
        }
        Parsed { expr, errors }
    }

    fn current(&self) -> &Token {
        let tokens = &self.lexer.tokens;
        &tokens[self.position.min(tokens.len() - 1)]
    }

    /// How many tokens were consumed since the start of the file.
    fn taken(&self) -> usize {
        self.base + self.position
    }

    /// Keeps [`LOOKAHEAD`] tokens lexed past the current one (or all up to `Eof`):
    /// the tokens before the previous one are dropped (only its span is read
    /// again, by [`Parser::previous_end`]) and the lexer fills the window again.
    #[inline(always)]
    fn refill(&mut self) {
        // once a token: the window is refilled once in [`WINDOW`] tokens
        if self.lexer.done() || self.position + LOOKAHEAD < self.lexer.tokens.len() {
            return;
        }
        self.refill_window();
    }

    #[inline(never)]
    fn refill_window(&mut self) {
        let consumed = self.position.saturating_sub(1);
        self.lexer.tokens.drain(..consumed);
        self.base += consumed;
        self.position -= consumed;
        self.lexer.fill(self.position + LOOKAHEAD + 1 + self.window);
        // a lexing error makes the windowed parse's result unused (the file is
        // parsed again whole): the rest is not parsed
        if !self.lexer.errors.is_empty() && !self.abandoned {
            self.abandoned = true;
            self.skip_to_end();
        }
    }

    /// Moves to `Eof`, past whatever is left (parsing was abandoned, or ended and
    /// the rest is lexed for its errors).
    fn skip_to_end(&mut self) {
        while !self.lexer.done() {
            // the last token lexed is kept: it may be the one before `Eof`
            let consumed = self.lexer.tokens.len().saturating_sub(1);
            self.lexer.tokens.drain(..consumed);
            self.base += consumed;
            self.lexer.fill(1 + self.window);
        }
        self.position = self.lexer.tokens.len() - 1;
    }

    fn kind(&self) -> &TokenKind {
        &self.current().kind
    }

    fn peek_kind(&self, offset: usize) -> &TokenKind {
        // only so far is the window kept lexed ahead
        debug_assert!(offset <= LOOKAHEAD);
        let tokens = &self.lexer.tokens;
        &tokens[(self.position + offset).min(tokens.len() - 1)].kind
    }

    /// Is the current token of `kind`? Only for kinds that carry no data (the
    /// parser asks only about keywords and punctuation this way).
    fn at(&self, kind: &TokenKind) -> bool {
        std::mem::discriminant(self.kind()) == std::mem::discriminant(kind)
    }

    /// Consumes the current token and returns its span. The last token (`Eof`) is
    /// never consumed.
    fn advance(&mut self) -> Span {
        let span = self.current().span;
        if self.position < self.lexer.tokens.len() - 1 {
            self.passed_whole();
            self.position += 1;
            self.refill();
        }
        span
    }

    /// The current token about to be passed: a plain string, passed, ends where
    /// its closing quote does (what [`Parser::previous_end`] reads), as the last of
    /// the three tokens the string rules make of it would.
    fn passed_whole(&mut self) {
        let token = &mut self.lexer.tokens[self.position];
        if let TokenKind::PlainString { end, .. } = token.kind {
            token.span.end = end;
        }
    }

    /// Consumes the current token and moves its kind out: the parser never goes
    /// back (`position` only grows) and never reads a consumed token's kind again
    /// (`previous_end` reads only its span), so nothing is copied.
    fn take(&mut self) -> TokenKind {
        let last = self.lexer.tokens.len() - 1;
        if self.position < last {
            self.passed_whole();
            let kind =
                std::mem::replace(&mut self.lexer.tokens[self.position].kind, TokenKind::Eof);
            self.position += 1;
            self.refill();
            kind
        } else {
            self.lexer.tokens[last].kind.clone()
        }
    }

    /// Consumes the current token, an identifier, and returns its name.
    fn take_identifier(&mut self) -> String {
        match self.take() {
            TokenKind::Identifier(name) => name,
            _ => String::new(),
        }
    }

    fn previous_end(&self) -> Span {
        if self.taken() == 0 {
            return Span::new(self.file, 0, 0);
        }
        // `refill` keeps the token before the current one, so with any taken the
        // window never starts at the current one
        let previous = &self.lexer.tokens[self.position - 1];
        Span {
            file: self.file,
            start: previous.span.end,
            end: previous.span.end,
        }
    }

    /// Records a syntax error; the [`MAX_ERRORS`]th ends parsing.
    fn report(&mut self, diagnostic: Diagnostic) {
        if self.abandoned {
            return;
        }
        if self.first_error_at_end.is_none() {
            // said at the end itself (something expected where the input ended); an
            // error of the last token (`<nixpkgs>`, an integer too large) is not,
            // though the parser stands at the end when it says it
            let end = self.lexer.source.len();
            let at_end = self.at(&TokenKind::Eof)
                && diagnostic
                    .span()
                    .is_some_and(|span| span.start as usize >= end);
            self.first_error_at_end = Some(at_end);
        }
        self.errors.push(diagnostic);
        if self.errors.len() >= MAX_ERRORS {
            self.abandoned = true;
            self.skip_to_end();
        }
    }

    fn error_at(&mut self, span: Span, message: String, help: &str) {
        if self.abandoned {
            return;
        }
        // one error per position: recovery often trips over the same token again
        // (and where a block was found unclosed, what else is missing there
        // follows from it)
        if self
            .errors
            .last()
            .and_then(Diagnostic::span)
            .is_some_and(|last| last.start == span.start)
            || self.gave_up_at == Some(span.start)
        {
            return;
        }
        self.report(
            Diagnostic::error(codes::SYNTAX_ERROR, message)
                .with_primary(span, "unexpected here")
                .with_help(help.to_string()),
        );
    }

    fn expected(&mut self, what: &str, help: &str) -> Expr {
        let token = self.current().clone();
        self.error_at(
            token.span,
            format!("unexpected {}, expected {what}", describe(&token.kind)),
            help,
        );
        Expr {
            kind: ExprKind::Error,
            span: token.span,
        }
    }

    /// Reports the `;` missing after a binding's `value`, at the current token or,
    /// when the binding's line ended without one, where the `;` belongs: after
    /// the value, if what follows is on a later line (`c = 2` then `};`), or after
    /// the part of the value before the line the `=` is on (`a = 1` then `b = 2;`,
    /// which reads as `a = 1 b` until the `=`; the application may end the value,
    /// as in `f = x: { ... }` then `g = 2;`). Nix says both at the next line. True
    /// when the parser stands at the next binding's `=`.
    fn missing_semicolon(&mut self, value: &Expr) -> bool {
        let found = self.current().clone();
        if found.kind == TokenKind::Eof || self.gave_up_at == Some(found.span.start) {
            // the input ended inside the set or `let`: its `{` (or `let`) is what
            // is not closed, said by its closer, not a `;` after the last value
            return false;
        }
        let source = self.lexer.source;
        let breaks = |from: u32, to: u32| {
            source
                .get(from as usize..to as usize)
                .is_some_and(|between| between.contains(&b'\n'))
        };
        let mut end = value.span.end;
        let mut label = "unexpected here";
        let mut at_next_binding = false;
        if let (TokenKind::Assign, Some((function, arguments))) =
            (&found.kind, rightmost_application(value))
        {
            // the last argument that starts a line is the next binding's name
            let mut before = function.span.end;
            for argument in arguments {
                if breaks(before, argument.span.start) {
                    end = before;
                    label = "this line was read as more of the value, up to this `=`";
                    at_next_binding = true;
                }
                before = argument.span.end;
            }
        }
        if end == value.span.end && !breaks(end, found.span.start) {
            self.expected("`;`", "end the binding with `;`");
            return false;
        }
        let place = Span {
            file: self.file,
            start: end,
            end,
        };
        self.report(
            Diagnostic::error(
                codes::SYNTAX_ERROR,
                format!(
                    "expected `;` after the binding's value, found {}",
                    describe(&found.kind)
                ),
            )
            .with_primary(place, "add `;` here")
            .with_secondary(found.span, label)
            .with_help("end the binding with `;`"),
        );
        at_next_binding
    }

    /// Consumes the closer `kind` of what `opener` opened, or reports it missing
    /// (consuming nothing). Where the parser stands at the end of the input or at
    /// another closer, the closer is missing somewhere between, often far above:
    /// the error is said at the opener, with where the parser gave up, and the
    /// first line after the opener's that is indented no deeper than it (where the
    /// closer usually belongs), as rustc says an unclosed delimiter. A wrong token
    /// inside (a missing operator, a stray word) is said where it stands.
    fn expect_closer(&mut self, kind: &TokenKind, opener: Span, help: &str) -> bool {
        if self.at(kind) {
            let closer = self.advance();
            if self.shallower(opener, closer) {
                self.closed_shallower.push((opener, closer));
            }
            return true;
        }
        let found = self.current().clone();
        // a list ends before a binding's `=` or `;` (see the list's loop)
        let elsewhere = matches!(
            found.kind,
            TokenKind::Eof
                | TokenKind::RightBrace
                | TokenKind::RightBracket
                | TokenKind::RightParen
                | TokenKind::In
        ) || (*kind == TokenKind::RightBracket
            && matches!(found.kind, TokenKind::Assign | TokenKind::Semicolon))
            || self.interpolation_left_open(opener, &found);
        if !elsewhere || self.abandoned {
            self.expected(&describe(kind), help);
            return false;
        }
        // a block around one found unclosed at the same place: that one is said
        if self.gave_up_at == Some(found.span.start) {
            return false;
        }
        let open = self.text_of(opener);
        self.gave_up_at = Some(found.span.start);
        self.first_error_at_end
            .get_or_insert(found.kind == TokenKind::Eof);
        // a block inside this one closed by a closer indented as this one's line:
        // that closer was this block's, and the inner block's is the one missing
        let inner = self
            .closed_shallower
            .iter()
            .rev()
            .find(|(inner, _)| inner.start > opener.start)
            .copied();
        if let Some((inner, closer)) = inner {
            let inner_text = self.text_of(inner);
            let closing = match inner_text.as_str() {
                "[" => "`]`",
                "(" => "`)`",
                _ => "`}`",
            };
            let mut diagnostic = Diagnostic::error(
                codes::SYNTAX_ERROR,
                format!("`{inner_text}` is not closed: its {closing} is missing"),
            )
            .with_primary(inner, format!("this `{inner_text}` is probably not closed"));
            if let Some(line) = self.dedent_after(inner, closer.start) {
                diagnostic = diagnostic
                    .with_secondary(line, format!("{closing} probably belongs before this line"));
            }
            self.report(
                diagnostic
                    .with_secondary(
                        closer,
                        format!(
                            "so this closer, indented as the `{open}` around it, closed it instead"
                        ),
                    )
                    .with_help(format!(
                        "add {closing} where what `{inner_text}` opened ends"
                    )),
            );
            return false;
        }
        let mut diagnostic = Diagnostic::error(
            codes::SYNTAX_ERROR,
            format!(
                "`{open}` is not closed: expected {} before {}",
                describe(kind),
                describe(&found.kind)
            ),
        )
        .with_primary(opener, format!("this `{open}` is never closed"));
        // an interpolation's `}` belongs on its own line, not where the indentation
        // comes back
        let interpolation = open == "${";
        let dedent = match interpolation {
            true => {
                self.unclosed_interpolations.push(opener);
                None
            }
            false => self.dedent_after(opener, found.span.start),
        };
        if let Some(line) = dedent {
            diagnostic = diagnostic.with_secondary(
                line,
                format!("{} probably belongs before this line", describe(kind)),
            );
        }
        self.report(
            diagnostic
                .with_secondary(found.span, "reached here without it")
                .with_help(format!("{help}, where what `{open}` opened ends")),
        );
        if interpolation {
            // every quote after it was read the other way round: what the parser
            // would say of the rest follows from this one mistake
            self.abandoned = true;
            self.skip_to_end();
        }
        false
    }

    /// The source text of `span` (a token: `{`, `[`, `(`).
    fn text_of(&self, span: Span) -> String {
        self.lexer
            .source
            .get(span.start as usize..span.end as usize)
            .map(|text| String::from_utf8_lossy(text).into_owned())
            .unwrap_or_default()
    }

    /// Whether `opener` is a `${` left open where the parser met `found` instead of
    /// its `}`: the quote meant to end its string began a new one, and what follows
    /// was read inside the interpolation. Either another `${` stands on its line
    /// (`"${x" + "${y}"`: no expression goes on with one), or `found` is on a later
    /// line and the `${` line has an odd count of quotes after it (`a = "x ${b";`:
    /// the last quote opened a string running past the line; the strings of an
    /// interpolation spanning lines on purpose come in pairs).
    fn interpolation_left_open(&self, opener: Span, found: &Token) -> bool {
        let source = self.lexer.source;
        if source.get(opener.start as usize..opener.end as usize) != Some(b"${") {
            return false;
        }
        if !self.on_a_later_line(opener, found.span) {
            return found.kind == TokenKind::DollarCurly;
        }
        let rest = source.get(opener.end as usize..).unwrap_or_default();
        let line = &rest[..memchr::memchr(b'\n', rest).unwrap_or(rest.len())];
        // an odd count of quotes: the last opened a string that runs past the line
        // (strings inside the interpolation, `${f "a"}`, come in pairs)
        let mut quotes = 0;
        let mut bytes = line.iter().enumerate();
        while let Some((at, byte)) = bytes.next() {
            match byte {
                b'\\' => {
                    bytes.next();
                }
                b'"' => quotes += 1,
                b'\'' if line.get(at + 1) == Some(&b'\'') => {
                    bytes.next();
                    quotes += 1;
                }
                _ => {}
            }
        }
        quotes % 2 == 1
    }

    /// Whether a line break lies between `before` and `after`.
    fn on_a_later_line(&self, before: Span, after: Span) -> bool {
        self.lexer
            .source
            .get(before.end as usize..after.start as usize)
            .is_some_and(|between| memchr::memchr(b'\n', between).is_some())
    }

    /// Whether `closer` starts its line and is indented less than the line `opener`
    /// is on (lines read back at most a few kilobytes: a file of one long line is
    /// not read again for every block).
    fn shallower(&self, opener: Span, closer: Span) -> bool {
        const REACH: usize = 4096;
        let source = self.lexer.source;
        let blank = |byte: &u8| *byte == b' ' || *byte == b'\t';
        let (opener, closer) = (opener.start as usize, closer.start as usize);
        if closer > source.len() || opener >= closer {
            return false;
        }
        // the closer starts its line: only blanks before it, read back over them
        // alone (a closer in the middle of a long line costs a byte or so)
        let closer_indent = source[..closer]
            .iter()
            .rev()
            .take_while(|byte| blank(byte))
            .count();
        let line_start = closer - closer_indent;
        if line_start > 0 && source[line_start - 1] != b'\n' {
            return false;
        }
        // the opener's line, read back at most a few kilobytes
        let from = opener.saturating_sub(REACH);
        let Some(start) = source[from..opener]
            .iter()
            .rposition(|byte| *byte == b'\n')
            .map(|newline| from + newline + 1)
            .or((from == 0).then_some(0))
        else {
            return false;
        };
        let opener_indent = source[start..opener]
            .iter()
            .take_while(|byte| blank(byte))
            .count();
        closer_indent < opener_indent
    }

    /// The first token of the first line after `opener`'s line (and before
    /// `before`) that is indented no deeper than the opener's line: where a block
    /// opened at the end of a line usually ends.
    fn dedent_after(&self, opener: Span, before: u32) -> Option<Span> {
        let source = self.lexer.source;
        let line_start = |at: usize| {
            source[..at]
                .iter()
                .rposition(|byte| *byte == b'\n')
                .map_or(0, |newline| newline + 1)
        };
        let indent = |start: usize| {
            source[start..]
                .iter()
                .take_while(|byte| **byte == b' ' || **byte == b'\t')
                .count()
        };
        let opener_start = usize::try_from(opener.start).ok()?.min(source.len());
        let depth = indent(line_start(opener_start));
        let before = usize::try_from(before).ok()?.min(source.len());
        let mut at = opener_start + source[opener_start..].iter().position(|b| *b == b'\n')? + 1;
        while at < before {
            let width = indent(at);
            let first = at + width;
            let rest = &source[first..];
            let blank = rest
                .first()
                .is_none_or(|byte| matches!(byte, b'\n' | b'\r' | b'#'));
            if !blank && width <= depth {
                let end = first + rest.iter().take_while(|b| !b.is_ascii_whitespace()).count();
                return (first < before).then(|| Span::new(self.file, first, end.max(first + 1)));
            }
            at = first + rest.iter().position(|b| *b == b'\n')? + 1;
        }
        None
    }

    /// Consumes `kind` or reports that it is missing (consuming nothing).
    fn expect(&mut self, kind: &TokenKind, help: &str) -> bool {
        if self.at(kind) {
            self.advance();
            true
        } else {
            let what = describe(kind);
            self.expected(&what, help);
            false
        }
    }

    fn enter(&mut self) -> bool {
        self.depth += 1;
        if self.depth > MAX_NESTING && !self.abandoned {
            let span = self.current().span;
            // more input cannot make it shallower
            self.first_error_at_end.get_or_insert(false);
            self.errors.push(
                Diagnostic::error(
                    codes::NESTED_TOO_DEEPLY,
                    format!("expression nested more than {MAX_NESTING} levels deep"),
                )
                .with_primary(span, "nesting limit reached here")
                .with_help("split the expression with `let` bindings"),
            );
            self.abandoned = true;
            self.skip_to_end();
        }
        !self.abandoned
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    fn error_node(&self, span: Span) -> Expr {
        Expr {
            kind: ExprKind::Error,
            span,
        }
    }

    pub fn expr(&mut self) -> Expr {
        // a binding's value that is one literal (most values of a data file)
        if matches!(self.peek_kind(1), TokenKind::Semicolon)
            && let Some(literal) = self.literal_alone()
        {
            return literal;
        }
        if !self.enter() {
            self.leave();
            return self.error_node(self.current().span);
        }
        let expr = self.expr_function();
        self.leave();
        expr
    }

    /// The current token when it is a plain string or a number in range, taken as
    /// [`Parser::expr_simple`] takes it, for a caller that has seen that nothing
    /// after it can take it further: what the layers of functions, operators,
    /// application and selection would have made of it, without passing through
    /// them. Not taken this way within reach of [`MAX_NESTING`], where passing
    /// through them reports the nesting.
    fn literal_alone(&mut self) -> Option<Expr> {
        if self.depth + LITERAL_LAYERS > MAX_NESTING {
            return None;
        }
        let span = self.current().span;
        let kind = match self.kind() {
            &TokenKind::Integer(Some(value)) => ExprKind::Integer(value),
            &TokenKind::Float(Some(value)) => ExprKind::Float(value),
            TokenKind::PlainString { .. } => return Some(self.plain_string()),
            _ => return None,
        };
        self.advance();
        Some(Expr { kind, span })
    }

    fn expr_function(&mut self) -> Expr {
        let start = self.current().span;
        match self.kind() {
            TokenKind::Identifier(_) if matches!(self.peek_kind(1), TokenKind::Colon) => {
                let name = self.take_identifier();
                self.advance();
                let body = self.expr();
                Expr {
                    span: start.to(body.span),
                    kind: ExprKind::Lambda {
                        param: Box::new(Param::Identifier { name, span: start }),
                        body: Box::new(body),
                    },
                }
            }
            TokenKind::Identifier(_) if matches!(self.peek_kind(1), TokenKind::At) => {
                let name = self.take_identifier();
                self.advance();
                if !self.at(&TokenKind::LeftBrace) {
                    return self.expected("`{` after `@`", "write `name @ { a, b }: body`");
                }
                self.formals_lambda(start, Some((name, start)))
            }
            TokenKind::LeftBrace if self.looks_like_formals() => self.formals_lambda(start, None),
            TokenKind::Assert => {
                self.advance();
                let condition = self.expr();
                self.expect(
                    &TokenKind::Semicolon,
                    "an assertion is `assert condition; body`",
                );
                let body = self.expr();
                Expr {
                    span: start.to(body.span),
                    kind: ExprKind::Assert {
                        condition: Box::new(condition),
                        body: Box::new(body),
                    },
                }
            }
            TokenKind::With => {
                self.advance();
                let namespace = self.expr();
                self.expect(&TokenKind::Semicolon, "`with` is `with attrs; body`");
                let body = self.expr();
                Expr {
                    span: start.to(body.span),
                    kind: ExprKind::With {
                        namespace: Box::new(namespace),
                        body: Box::new(body),
                    },
                }
            }
            TokenKind::Let if !matches!(self.peek_kind(1), TokenKind::LeftBrace) => {
                self.advance();
                let bindings = self.bindings(true);
                self.expect(&TokenKind::In, "a `let` is `let name = value; in body`");
                let body = self.expr();
                Expr {
                    span: start.to(body.span),
                    kind: ExprKind::Let {
                        bindings,
                        body: Box::new(body),
                    },
                }
            }
            _ => self.expr_if(),
        }
    }

    /// After `{`: is this a formal parameter list rather than an attribute set?
    fn looks_like_formals(&self) -> bool {
        match self.peek_kind(1) {
            TokenKind::RightBrace => {
                matches!(self.peek_kind(2), TokenKind::Colon | TokenKind::At)
            }
            TokenKind::Ellipsis => true,
            TokenKind::Identifier(_) => match self.peek_kind(2) {
                TokenKind::Comma | TokenKind::Question => true,
                TokenKind::RightBrace => {
                    matches!(self.peek_kind(3), TokenKind::Colon | TokenKind::At)
                }
                _ => false,
            },
            _ => false,
        }
    }

    fn formals_lambda(&mut self, start: Span, mut at: Option<(String, Span)>) -> Expr {
        let opener = self.advance(); // {
        let mut formals: Vec<Formal> = Vec::new();
        let mut ellipsis = false;
        loop {
            match self.kind() {
                TokenKind::RightBrace => break,
                TokenKind::Ellipsis => {
                    self.advance();
                    ellipsis = true;
                    break;
                }
                TokenKind::Identifier(_) => {
                    let span = self.current().span;
                    let name = self.take_identifier();
                    let default = if self.at(&TokenKind::Question) {
                        self.advance();
                        Some(self.expr())
                    } else {
                        None
                    };
                    formals.push(Formal {
                        name,
                        span,
                        default,
                    });
                    if self.at(&TokenKind::Comma) {
                        self.advance();
                    } else {
                        break;
                    }
                }
                _ => {
                    self.expected(
                        "an argument name, `...` or `}`",
                        "a function's arguments are written `{ a, b ? default, ... }`",
                    );
                    break;
                }
            }
        }
        if !self.expect_closer(
            &TokenKind::RightBrace,
            opener,
            "close the argument list with `}`",
        ) {
            self.skip_to(&[TokenKind::RightBrace, TokenKind::Colon]);
            if self.at(&TokenKind::RightBrace) {
                self.advance();
            }
        }
        if at.is_none() && self.at(&TokenKind::At) {
            self.advance();
            match self.kind() {
                TokenKind::Identifier(_) => {
                    let span = self.current().span;
                    at = Some((self.take_identifier(), span));
                }
                _ => {
                    self.expected("a name after `@`", "write `{ a, b } @ name: body`");
                }
            }
        }
        self.expect(&TokenKind::Colon, "a function is `{ a, b }: body`");
        let body = self.expr();
        Expr {
            span: start.to(body.span),
            kind: ExprKind::Lambda {
                param: Box::new(Param::Formals {
                    formals,
                    ellipsis,
                    at,
                }),
                body: Box::new(body),
            },
        }
    }

    fn expr_if(&mut self) -> Expr {
        if self.at(&TokenKind::If) {
            let start = self.advance();
            let condition = self.expr();
            self.expect(&TokenKind::Then, "a conditional is `if c then a else b`");
            let then = self.expr();
            self.expect(&TokenKind::Else, "a conditional needs an `else` branch");
            let otherwise = self.expr();
            return Expr {
                span: start.to(otherwise.span),
                kind: ExprKind::If {
                    condition: Box::new(condition),
                    then: Box::new(then),
                    otherwise: Box::new(otherwise),
                },
            };
        }
        self.expr_op(0)
    }

    fn expr_op(&mut self, min_power: u8) -> Expr {
        if !self.enter() {
            self.leave();
            return self.error_node(self.current().span);
        }
        let start = self.current().span;
        let mut left = match self.kind() {
            TokenKind::Bang => {
                self.advance();
                let operand = self.expr_op(NOT_POWER);
                Expr {
                    span: start.to(operand.span),
                    kind: ExprKind::Unary {
                        op: UnaryOp::Not,
                        expr: Box::new(operand),
                    },
                }
            }
            TokenKind::Minus => {
                self.advance();
                let operand = self.expr_op(NEGATE_POWER);
                Expr {
                    span: start.to(operand.span),
                    kind: ExprKind::Unary {
                        op: UnaryOp::Negate,
                        expr: Box::new(operand),
                    },
                }
            }
            _ => self.expr_app(),
        };
        let mut last_non_associative: Option<u8> = None;
        loop {
            if self.at(&TokenKind::Question) {
                if HAS_ATTR_POWER < min_power {
                    break;
                }
                if last_non_associative == Some(HAS_ATTR_POWER) {
                    let span = self.current().span;
                    self.error_at(
                        span,
                        "unexpected `?`: `?` cannot be chained".into(),
                        "add parentheses to say which test comes first",
                    );
                }
                self.advance();
                let path = self.attr_path();
                let end = path.last().map(AttrName::span).unwrap_or(left.span);
                left = Expr {
                    span: left.span.to(end),
                    kind: ExprKind::HasAttr {
                        expr: Box::new(left),
                        path,
                    },
                };
                last_non_associative = Some(HAS_ATTR_POWER);
                continue;
            }
            let Some((left_power, right_power, op)) = binding_power(self.kind()) else {
                break;
            };
            if left_power < min_power {
                break;
            }
            let op_span = self.current().span;
            let op_kind = self.take();
            if is_non_associative(left_power) && last_non_associative == Some(left_power) {
                self.error_at(
                    op_span,
                    format!("unexpected {}: it cannot be chained", describe(&op_kind)),
                    "add parentheses to say which comparison comes first",
                );
            }
            let right = self.expr_op(right_power);
            left = Expr {
                span: left.span.to(right.span),
                kind: ExprKind::Binary {
                    op,
                    op_span,
                    left: Box::new(left),
                    right: Box::new(right),
                },
            };
            last_non_associative = is_non_associative(left_power).then_some(left_power);
        }
        self.leave();
        left
    }

    fn starts_select(&self) -> bool {
        match self.kind() {
            TokenKind::Identifier(_)
            | TokenKind::Integer(_)
            | TokenKind::Float(_)
            | TokenKind::PlainString { .. }
            | TokenKind::StringOpen
            | TokenKind::IndentedOpen
            | TokenKind::Path(_)
            | TokenKind::HomePath(_)
            | TokenKind::SearchPath(_)
            | TokenKind::Uri(_)
            | TokenKind::LeftParen
            | TokenKind::LeftBracket
            | TokenKind::Rec => true,
            TokenKind::LeftBrace => !self.looks_like_formals(),
            TokenKind::Let => matches!(self.peek_kind(1), TokenKind::LeftBrace),
            _ => false,
        }
    }

    fn expr_app(&mut self) -> Expr {
        let function = self.expr_select();
        if !self.starts_select() {
            return function;
        }
        let mut arguments = Vec::new();
        while self.starts_select() && !self.abandoned {
            arguments.push(self.expr_select());
        }
        let end = arguments.last().map(|a| a.span).unwrap_or(function.span);
        Expr {
            span: function.span.to(end),
            kind: ExprKind::Apply {
                function: Box::new(function),
                arguments,
            },
        }
    }

    fn expr_select(&mut self) -> Expr {
        if !self.enter() {
            self.leave();
            return self.error_node(self.current().span);
        }
        let simple = self.expr_simple();
        let result = if self.at(&TokenKind::Dot) {
            self.advance();
            let path = self.attr_path();
            let mut span = simple
                .span
                .to(path.last().map(AttrName::span).unwrap_or(simple.span));
            let default = if self.at(&TokenKind::Or) {
                self.advance();
                let default = self.expr_select();
                span = span.to(default.span);
                Some(Box::new(default))
            } else {
                None
            };
            Expr {
                span,
                kind: ExprKind::Select {
                    expr: Box::new(simple),
                    path,
                    default,
                },
            }
        } else if self.at(&TokenKind::Or) {
            // Nix reads `f or` as `f` applied to a variable named `or`
            let or_span = self.advance();
            Expr {
                span: simple.span.to(or_span),
                kind: ExprKind::Apply {
                    function: Box::new(simple),
                    arguments: vec![Expr {
                        kind: ExprKind::Variable("or".into()),
                        span: or_span,
                    }],
                },
            }
        } else {
            simple
        };
        self.leave();
        result
    }

    fn attr_path(&mut self) -> Vec<AttrName> {
        let mut path = Vec::new();
        loop {
            match self.attr_name() {
                Some(name) => path.push(name),
                None => {
                    self.expected(
                        "an attribute name",
                        "attribute names are identifiers, strings or `${...}`",
                    );
                    break;
                }
            }
            if self.at(&TokenKind::Dot) {
                self.advance();
            } else {
                break;
            }
        }
        path
    }

    fn attr_name(&mut self) -> Option<AttrName> {
        match self.kind() {
            TokenKind::Identifier(_) => {
                let span = self.current().span;
                Some(AttrName::Static {
                    name: self.take_identifier().into_bytes(),
                    span,
                })
            }
            TokenKind::Or => {
                let span = self.advance();
                Some(AttrName::Static {
                    name: b"or".to_vec(),
                    span,
                })
            }
            TokenKind::PlainString { .. } => {
                let (name, span) = self.take_plain_string();
                Some(AttrName::Static { name, span })
            }
            TokenKind::StringOpen => {
                let string = self.string();
                let span = string.span;
                match into_literal_bytes(string.kind) {
                    Ok(name) => Some(AttrName::Static { name, span }),
                    Err(kind) => Some(AttrName::Dynamic(Box::new(Expr { kind, span }))),
                }
            }
            TokenKind::DollarCurly => {
                let start = self.advance();
                let expr = self.expr();
                let end = self.current().span;
                self.expect_closer(
                    &TokenKind::RightBrace,
                    start,
                    "close the interpolation with `}`",
                );
                let span = start.to(end);
                // as in Nix, `${"name"}` with a plain string literal is a static name
                match into_literal_bytes(expr.kind) {
                    Ok(name) => Some(AttrName::Static { name, span }),
                    Err(kind) => Some(AttrName::Dynamic(Box::new(Expr { span, kind }))),
                }
            }
            _ => None,
        }
    }

    fn expr_simple(&mut self) -> Expr {
        let span = self.current().span;
        match self.kind() {
            TokenKind::Identifier(_) => Expr {
                kind: ExprKind::Variable(self.take_identifier()),
                span,
            },
            &TokenKind::Integer(value) => {
                self.advance();
                match value {
                    Some(value) => Expr {
                        kind: ExprKind::Integer(value),
                        span,
                    },
                    None => {
                        self.report(
                            Diagnostic::error(
                                codes::INVALID_INTEGER,
                                "integer literal is too large",
                            )
                            .with_primary(span, "larger than 9223372036854775807")
                            .with_help(
                                "integers are 64-bit; use a float (`1.0e20`) for larger numbers",
                            ),
                        );
                        self.error_node(span)
                    }
                }
            }
            &TokenKind::Float(value) => {
                self.advance();
                match value {
                    Some(value) => Expr {
                        kind: ExprKind::Float(value),
                        span,
                    },
                    None => {
                        self.report(
                            Diagnostic::error(
                                codes::INVALID_INTEGER,
                                "float literal is out of range",
                            )
                            .with_primary(span, "not representable as a normal 64-bit float")
                            .with_help(
                                "floats are 64-bit doubles: magnitudes from about 2.2e-308 to 1.8e308, or 0",
                            ),
                        );
                        self.error_node(span)
                    }
                }
            }
            TokenKind::PlainString { .. } => self.plain_string(),
            TokenKind::StringOpen => self.string(),
            TokenKind::IndentedOpen => self.indented_string(),
            TokenKind::Path(_) => self.path(),
            TokenKind::HomePath(_) => {
                let expr = self.path();
                self.report(
                    Diagnostic::error(codes::HOME_PATH, "home-relative paths are not supported")
                        .with_primary(expr.span, "this depends on the user running the evaluation")
                        .with_help("evaluation is deterministic; use a path relative to this file (`./...`)"),
                );
                self.error_node(expr.span)
            }
            TokenKind::SearchPath(_) => {
                let TokenKind::SearchPath(text) = self.take() else {
                    return self.error_node(span);
                };
                self.report(
                    Diagnostic::error(
                        codes::SEARCH_PATH,
                        format!("search path `{text}` is not supported"),
                    )
                    .with_primary(span, "looked up in NIX_PATH by Nix")
                    .with_help(
                        "import files of the repository by relative path, e.g. `import ./lib.nix`",
                    ),
                );
                self.error_node(span)
            }
            TokenKind::Uri(_) => {
                let TokenKind::Uri(text) = self.take() else {
                    return self.error_node(span);
                };
                Expr {
                    kind: ExprKind::Uri(text),
                    span,
                }
            }
            TokenKind::LeftParen => {
                self.advance();
                let inner = self.expr();
                let end = self.current().span;
                if !self.expect_closer(
                    &TokenKind::RightParen,
                    span,
                    "close the parenthesis with `)`",
                ) {
                    return self.error_node(span.to(inner.span));
                }
                Expr {
                    kind: inner.kind,
                    span: span.to(end),
                }
            }
            TokenKind::Let if matches!(self.peek_kind(1), TokenKind::LeftBrace) => {
                self.advance();
                self.advance();
                let bindings = self.bindings(false);
                let end = self.current().span;
                self.expect(&TokenKind::RightBrace, "close the attribute set with `}`");
                Expr {
                    kind: ExprKind::LegacyLet { bindings },
                    span: span.to(end),
                }
            }
            TokenKind::Rec => {
                self.advance();
                if !self.at(&TokenKind::LeftBrace) {
                    return self.expected("`{` after `rec`", "a recursive set is `rec { ... }`");
                }
                self.attrs(span, true)
            }
            TokenKind::LeftBrace => self.attrs(span, false),
            TokenKind::LeftBracket => {
                self.advance();
                let base = self.items.len();
                let mut comma_said = false;
                loop {
                    if self.at(&TokenKind::RightBracket) || self.abandoned {
                        break;
                    }
                    // an item that is one literal: nothing selects from it
                    let alone = !matches!(self.peek_kind(1), TokenKind::Dot | TokenKind::Or);
                    if let Some(item) = alone.then(|| self.literal_alone()).flatten() {
                        self.items.push(item);
                    } else if self.starts_select() {
                        let item = self.expr_select();
                        self.items.push(item);
                    } else if matches!(
                        self.kind(),
                        TokenKind::Eof | TokenKind::RightBrace | TokenKind::RightParen
                    ) || (matches!(self.kind(), TokenKind::Assign | TokenKind::Semicolon)
                        && self.on_a_later_line(span, self.current().span))
                    {
                        // the list's `]` is missing (the set around it ends, or
                        // the next binding begins): said at its `[`
                        break;
                    } else if self.at(&TokenKind::Comma) {
                        // `[ "a", "b" ]`: said once for the list, not once a comma
                        let comma = self.advance();
                        if !comma_said {
                            comma_said = true;
                            self.error_at(
                                comma,
                                "list elements are separated by spaces, not commas".to_string(),
                                "remove the commas: `[ \"a\" \"b\" ]`",
                            );
                        }
                    } else {
                        let bad = self.current().clone();
                        let help = if bad.kind == TokenKind::Minus {
                            "a list element is a simple expression: write `(-1)` or `(f x)` in parentheses"
                        } else {
                            "list elements are separated by spaces; wrap complex elements in parentheses"
                        };
                        self.error_at(
                            bad.span,
                            format!("unexpected {} in a list", describe(&bad.kind)),
                            help,
                        );
                        self.advance();
                    }
                }
                let end = self.current().span;
                self.expect_closer(&TokenKind::RightBracket, span, "close the list with `]`");
                let items = self.items.drain(base..).collect();
                Expr {
                    kind: ExprKind::List(items),
                    span: span.to(end),
                }
            }
            _ => self.expected("an expression", "an expression was expected here"),
        }
    }

    fn attrs(&mut self, start: Span, recursive: bool) -> Expr {
        let opener = self.advance(); // {
        let bindings = self.bindings(false);
        let end = self.current().span;
        self.expect_closer(
            &TokenKind::RightBrace,
            opener,
            "close the attribute set with `}`",
        );
        Expr {
            kind: ExprKind::Attrs {
                recursive,
                bindings,
            },
            span: start.to(end),
        }
    }

    /// Skips tokens until one of `stops` at the current nesting level (or the end).
    fn skip_to(&mut self, stops: &[TokenKind]) {
        let mut depth = 0usize;
        loop {
            let kind = self.kind();
            if matches!(kind, TokenKind::Eof) {
                return;
            }
            if depth == 0 && stops.iter().any(|stop| self.at(stop)) {
                return;
            }
            match kind {
                TokenKind::LeftBrace
                | TokenKind::LeftBracket
                | TokenKind::LeftParen
                | TokenKind::DollarCurly => depth += 1,
                TokenKind::RightBrace | TokenKind::RightBracket | TokenKind::RightParen => {
                    if depth == 0 {
                        return;
                    }
                    depth -= 1;
                }
                _ => {}
            }
            self.advance();
        }
    }

    /// `name = value;` and `inherit ...;` until `}` (or `in` for `let`).
    fn bindings(&mut self, in_let: bool) -> Vec<Binding> {
        let base = self.bindings.len();
        loop {
            if self.abandoned {
                break;
            }
            match self.kind() {
                // `)` or `]` here: the set's `}` (or the `let`'s `in`) is missing,
                // which its closer says at its opener
                TokenKind::RightBrace
                | TokenKind::Eof
                | TokenKind::RightParen
                | TokenKind::RightBracket => break,
                TokenKind::In if in_let => break,
                TokenKind::Inherit => {
                    let start = self.advance();
                    // Nix places every inherited attribute right after `inherit`
                    // (or after its `(...)`): that is what `unsafeGetAttrPos` reports
                    let mut position = start.end;
                    let from = if self.at(&TokenKind::LeftParen) {
                        self.advance();
                        let from = self.expr();
                        let close = self.current().span;
                        if self.expect(&TokenKind::RightParen, "close `inherit (...)` with `)`") {
                            position = close.end;
                        }
                        Some(Box::new(from))
                    } else {
                        None
                    };
                    let mut names = Vec::new();
                    while let Some(mut name) = self.attr_name() {
                        if let AttrName::Static { span, .. } = &mut name {
                            span.start = position.min(span.start);
                        }
                        names.push(name);
                    }
                    let end = self.current().span;
                    if !self.expect(&TokenKind::Semicolon, "end `inherit` with `;`") {
                        self.skip_to(&[TokenKind::Semicolon]);
                        if self.at(&TokenKind::Semicolon) {
                            self.advance();
                        }
                    }
                    self.bindings.push(Binding::Inherit {
                        from,
                        names,
                        span: start.to(end),
                    });
                }
                _ => {
                    let start = self.current().span;
                    let start_position = self.taken();
                    let Some(first) = self.attr_name() else {
                        let help = if in_let {
                            "a `let` binding is `name = value;`, and the bindings end with `in`"
                        } else {
                            "an attribute is `name = value;`"
                        };
                        self.expected("an attribute name", help);
                        self.recover_binding();
                        if self.taken() == start_position {
                            // a closer or `in` that is not ours: the caller reports it
                            break;
                        }
                        continue;
                    };
                    let mut path = vec![first];
                    while self.at(&TokenKind::Dot) {
                        self.advance();
                        match self.attr_name() {
                            Some(name) => path.push(name),
                            None => {
                                self.expected("an attribute name", "attribute paths are `a.b.c`");
                                break;
                            }
                        }
                    }
                    if !self.expect(&TokenKind::Assign, "an attribute is `name = value;`") {
                        self.recover_binding();
                        continue;
                    }
                    let value = self.expr();
                    let end = self.current().span;
                    let mut last = None;
                    loop {
                        if self.at(&TokenKind::Semicolon) {
                            self.advance();
                            break;
                        }
                        // the next binding was read into this one's value, up to its
                        // `=`: its value is read on, and its `;` looked for in turn
                        // (skipping to the next `;` would land inside it)
                        if self.missing_semicolon(last.as_ref().unwrap_or(&value)) {
                            self.advance();
                            last = Some(self.expr());
                            continue;
                        }
                        self.recover_binding();
                        break;
                    }
                    self.bindings.push(Binding::Assign {
                        span: start.to(end),
                        path,
                        value,
                    });
                }
            }
        }
        self.bindings.drain(base..).collect()
    }

    /// A plain string token: a string of one literal part (none when empty).
    fn plain_string(&mut self) -> Expr {
        let (text, span) = self.take_plain_string();
        let mut parts = StringParts::new();
        if !text.is_empty() {
            parts.push(StringPart::Literal(text));
        }
        Expr {
            kind: ExprKind::String(parts),
            span,
        }
    }

    /// Takes the current token, a plain string: its text, and its span from the
    /// opening quote to the closing one.
    fn take_plain_string(&mut self) -> (Vec<u8>, Span) {
        let start = self.current().span;
        match self.take() {
            TokenKind::PlainString { text, end } => (
                text,
                Span {
                    end: end.max(start.start),
                    ..start
                },
            ),
            _ => (Vec::new(), start),
        }
    }

    /// `"..."`: literal chunks and `${...}` interpolations.
    fn string(&mut self) -> Expr {
        let start = self.advance(); // "
        let mut parts = StringParts::new();
        loop {
            match self.kind() {
                TokenKind::StringChunk(_) => {
                    if let TokenKind::StringChunk(bytes) = self.take() {
                        push_literal(&mut parts, bytes);
                    }
                }
                TokenKind::DollarCurly => {
                    let interpolation = self.interpolation();
                    parts.push(StringPart::Interpolation(Box::new(interpolation)));
                }
                TokenKind::StringClose => {
                    let end = self.advance();
                    return Expr {
                        kind: ExprKind::String(parts),
                        span: start.to(end),
                    };
                }
                _ => {
                    // the lexer has reported the unterminated string
                    let end = self.previous_end();
                    return self.error_node(start.to(end));
                }
            }
        }
    }

    fn interpolation(&mut self) -> Expr {
        let start = self.advance(); // ${
        let expr = self.expr();
        let end = self.current().span;
        if !self.expect_closer(
            &TokenKind::RightBrace,
            start,
            "close the interpolation with `}`",
        ) {
            self.skip_to(&[TokenKind::RightBrace]);
            if self.at(&TokenKind::RightBrace) {
                self.advance();
            }
        }
        let _ = (start, end);
        expr
    }

    /// `''...''` with Nix's indentation stripping.
    fn indented_string(&mut self) -> Expr {
        let start = self.advance(); // ''
        let mut pieces: Vec<IndentedPiece> = Vec::new();
        loop {
            match self.kind() {
                TokenKind::IndentedChunk { .. } => {
                    if let TokenKind::IndentedChunk {
                        text,
                        has_indentation,
                    } = self.take()
                    {
                        pieces.push(IndentedPiece::Text {
                            text,
                            has_indentation,
                        });
                    }
                }
                TokenKind::DollarCurly => {
                    let interpolation = self.interpolation();
                    pieces.push(IndentedPiece::Interpolation(interpolation));
                }
                TokenKind::IndentedClose => {
                    let end = self.advance();
                    return Expr {
                        kind: ExprKind::String(strip_indentation(pieces)),
                        span: start.to(end),
                    };
                }
                _ => {
                    let end = self.previous_end();
                    return self.error_node(start.to(end));
                }
            }
        }
    }

    /// A path literal, possibly with interpolations: `./a/${b}/c`.
    fn path(&mut self) -> Expr {
        let first_span = self.current().span;
        let mut parts = StringParts::new();
        if let TokenKind::Path(text) | TokenKind::HomePath(text) = self.take() {
            parts.push(StringPart::Literal(text.into_bytes()));
        }
        let mut end = first_span;
        // Nix's grammar continues a path only towards an interpolation: before the
        // first `${`, at most one more piece of text (`./a/` `b${x}`), and a path
        // that goes on without any (`./a//b`, which the lexer reads as `./a/`
        // and `/b`) is a syntax error there
        let mut interpolated = false;
        let mut pieces_before: Vec<Span> = Vec::new();
        loop {
            match self.kind() {
                TokenKind::PathChunk(_) => {
                    end = self.current().span;
                    if !interpolated {
                        pieces_before.push(end);
                    }
                    if let TokenKind::PathChunk(text) = self.take() {
                        push_literal(&mut parts, text.into_bytes());
                    }
                }
                TokenKind::DollarCurly => {
                    if !interpolated && pieces_before.len() > 1 {
                        self.error_at(
                            pieces_before[1],
                            "unexpected path segment, expected `${`".to_string(),
                            "write the path with one `/` between its names (`./a/b`); a path goes on past a `/` only into an interpolation (`./a/${name}`)",
                        );
                    }
                    interpolated = true;
                    let interpolation = self.interpolation();
                    end = self.previous_end();
                    parts.push(StringPart::Interpolation(Box::new(interpolation)));
                }
                TokenKind::PathEnd => {
                    if !interpolated && let Some(piece) = pieces_before.first() {
                        self.error_at(
                            *piece,
                            "unexpected path segment: `//` in a path".to_string(),
                            "write the path with one `/` between its names (`./a/b`); a path goes on past a `/` only into an interpolation (`./a/${name}`)",
                        );
                    }
                    self.advance();
                    break;
                }
                _ => break,
            }
        }
        Expr {
            kind: ExprKind::Path(parts),
            span: first_span.to(end),
        }
    }

    fn recover_binding(&mut self) {
        self.skip_to(&[TokenKind::Semicolon, TokenKind::In]);
        if self.at(&TokenKind::Semicolon) {
            self.advance();
        }
    }
}

/// The application at the end of `expr` (its function and arguments), if it ends
/// in one: where a binding missing its `;` takes the next binding's name as an
/// argument. The end of a function is its body, of `if` its `else` branch, of an
/// operation its right operand.
fn rightmost_application(mut expr: &Expr) -> Option<(&Expr, &[Expr])> {
    loop {
        expr = match &expr.kind {
            ExprKind::Apply {
                function,
                arguments,
            } => return Some((function, arguments)),
            ExprKind::Lambda { body, .. }
            | ExprKind::Let { body, .. }
            | ExprKind::With { body, .. }
            | ExprKind::Assert { body, .. } => body,
            ExprKind::If { otherwise, .. } => otherwise,
            ExprKind::Binary { right, .. } => right,
            ExprKind::Unary { expr, .. } => expr,
            _ => return None,
        };
    }
}

fn push_literal(parts: &mut StringParts, bytes: Vec<u8>) {
    if let Some(StringPart::Literal(previous)) = parts.last_mut() {
        previous.extend_from_slice(&bytes);
    } else {
        parts.push(StringPart::Literal(bytes));
    }
}

enum IndentedPiece {
    Text {
        text: Vec<u8>,
        has_indentation: bool,
    },
    Interpolation(Expr),
}

/// Nix's `stripIndentation`: the smallest indentation of the lines that have content
/// (interpolations and escapes count as content) is removed from every line, and a
/// last line of only spaces is dropped.
fn strip_indentation(pieces: Vec<IndentedPiece>) -> StringParts {
    let mut at_start_of_line = true;
    let mut min_indent = usize::MAX;
    let mut current_indent = 0;
    for piece in &pieces {
        match piece {
            IndentedPiece::Text {
                text,
                has_indentation: true,
            } => {
                for byte in text {
                    if at_start_of_line {
                        if *byte == b' ' {
                            current_indent += 1;
                        } else if *byte == b'\n' {
                            current_indent = 0;
                        } else {
                            at_start_of_line = false;
                            min_indent = min_indent.min(current_indent);
                        }
                    } else if *byte == b'\n' {
                        at_start_of_line = true;
                        current_indent = 0;
                    }
                }
            }
            _ => {
                if at_start_of_line {
                    at_start_of_line = false;
                    min_indent = min_indent.min(current_indent);
                }
            }
        }
    }
    if min_indent == usize::MAX {
        min_indent = 1_000_000;
    }

    let mut parts = StringParts::new();
    at_start_of_line = true;
    let mut dropped = 0;
    let count = pieces.len();
    for (index, piece) in pieces.into_iter().enumerate() {
        match piece {
            IndentedPiece::Interpolation(expr) => {
                at_start_of_line = false;
                dropped = 0;
                parts.push(StringPart::Interpolation(Box::new(expr)));
            }
            IndentedPiece::Text { text, .. } => {
                let mut stripped = Vec::with_capacity(text.len());
                for byte in text {
                    if at_start_of_line {
                        if byte == b' ' {
                            if dropped >= min_indent {
                                stripped.push(byte);
                            }
                            dropped += 1;
                        } else if byte == b'\n' {
                            dropped = 0;
                            stripped.push(byte);
                        } else {
                            at_start_of_line = false;
                            dropped = 0;
                            stripped.push(byte);
                        }
                    } else {
                        stripped.push(byte);
                        if byte == b'\n' {
                            at_start_of_line = true;
                        }
                    }
                }
                if index + 1 == count
                    && let Some(newline) = stripped.iter().rposition(|b| *b == b'\n')
                    && stripped[newline + 1..].iter().all(|b| *b == b' ')
                {
                    stripped.truncate(newline + 1);
                }
                push_literal(&mut parts, stripped);
            }
        }
    }
    parts
}

/// The bytes of a string without interpolation (a static attribute name), if the
/// expression is one; the expression back otherwise.
fn into_literal_bytes(kind: ExprKind) -> Result<Vec<u8>, ExprKind> {
    let ExprKind::String(parts) = kind else {
        return Err(kind);
    };
    if parts
        .iter()
        .any(|part| matches!(part, StringPart::Interpolation(_)))
    {
        return Err(ExprKind::String(parts));
    }
    let mut bytes = Vec::new();
    for part in parts {
        if let StringPart::Literal(literal) = part {
            if bytes.is_empty() {
                bytes = literal;
            } else {
                bytes.extend_from_slice(&literal);
            }
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `marked` without its `mark`, and where the mark stood.
    fn unmarked(marked: &str, mark: char) -> (usize, String) {
        let at = marked.find(mark).expect("a mark");
        (at, marked.replacen(mark, "", 1))
    }

    fn parse_ok(source: &str) -> Expr {
        let parsed = parse(source.as_bytes(), FileId(0));
        assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
        parsed.expr
    }

    /// A binding whose line ends without its `;` is told so at the end of its
    /// value, not at the next line (where Nix says it): the next binding's name
    /// reads as an argument of the value until its `=`. `|` marks where the `;`
    /// belongs; on one line the error stays at the token found.
    #[test]
    fn a_missing_semicolon_is_said_where_it_belongs() {
        for marked in [
            "let\n  a = 1|\n  b = 2;\nin a",
            "{\n  a = f x|\n  b.c = 2;\n}",
            "{ a = \"x\"|\n  # a comment\n  \"b\" = 2; }",
            "{ a = g\n    (h 1)|\n  b = 2; }",
            "{\n  b = {\n    c = 2|\n  };\n}",
            "{ a = [ 1 ]|\n  inherit b; }",
            "{ a = 1 |}",
            "{\n  f = { x, ... }: {\n    y = x;\n  }|\n\n  g = { x, ... }: [ x ];\n}",
            "{ a = 1 + 2|\n  g = 2; }",
            "{ a = if c then 1 else 2|\n  g = 2; }",
            "{ f = x: x|\n  g = 2; }",
            "{ f = x: x|\n  g = let y = 1; in y;\n  h = 3; }",
        ] {
            let (at, source) = unmarked(marked, '|');
            let parsed = parse(source.as_bytes(), FileId(0));
            let first = parsed.errors.first().expect("a syntax error");
            let span = first.primary.as_ref().expect("a place").span;
            assert_eq!(span.start as usize, at, "{marked}: {first:?}");
            assert_eq!(first.help.as_deref(), Some("end the binding with `;`"));
            // the binding read on is not also an error (its `let ... in` once was)
            assert_eq!(parsed.errors.len(), 1, "{marked}: {:?}", parsed.errors);
        }
    }

    /// Input the end came inside of is unfinished (more lines can finish it);
    /// input with a mistake before its end, a whole expression, or nothing but
    /// comments is not.
    #[test]
    fn input_is_unfinished_only_where_it_ends_inside_an_expression() {
        for unfinished in [
            "{",
            "{ a = 1;",
            "{ a = 1",
            "let x = 1;",
            "let x = 1; in",
            "[ 1 2",
            "(1 +",
            "f (g",
            "if x then 1",
            "if x then 1 else",
            "x: ",
            "{ a, b ? 2",
            "\"abc",
            "\"a ${b",
            "\"a ${ { x = 1;",
            "\'\'\n  text\n",
            "/* comment",
            "{\n  a = {\n    b = 1;\n  };\n",
        ] {
            assert!(ends_unfinished(unfinished.as_bytes()), "{unfinished:?}");
        }
        for finished in [
            "1 + 2",
            "{ a = 1; }",
            "{ a = 1; } }",
            "{ a = = 1;",
            ") + (",
            "[ 1, 2",
            "",
            "   ",
            "# only a comment",
            "/* a */ # b",
            "x: x",
            "let x = 1; in x",
            "\"abc\"",
            "{ a = 1; ) ",
            // errors of the last token, said when the parser stands at the end
            "<nixpkgs>",
            "99999999999999999999",
            "~/a",
            "1.5e999",
        ] {
            assert!(!ends_unfinished(finished.as_bytes()), "{finished:?}");
        }
    }

    /// A `${` that spans lines on purpose, with a mistake inside, has the mistake
    /// said where it stands, not the `${` as unclosed (also with a string of its
    /// own on the `${` line).
    #[test]
    fn a_mistake_inside_an_interpolation_over_lines_is_said_where_it_stands() {
        for (source, said) in [
            ("\"${\n  foo bar = 1\n}\"", "unexpected `=`"),
            (
                "\"Hello ${if name == \"root\"\n  then \"admin\";\n  else name}\"",
                "unexpected `;`",
            ),
        ] {
            let parsed = parse(source.as_bytes(), FileId(0));
            let first = parsed.errors.first().expect("a syntax error");
            assert!(first.message.contains(said), "{source}: {first:?}");
        }
    }

    /// Commas between list elements (the JSON habit) are said once for the list,
    /// at the first, not once a comma.
    #[test]
    fn commas_in_a_list_are_said_once() {
        let source = "[ \"web\", \"node-exporter\", \"users\", \"shop\" ]";
        let parsed = parse(source.as_bytes(), FileId(0));
        assert_eq!(parsed.errors.len(), 1, "{:?}", parsed.errors);
        assert!(parsed.errors[0].message.contains("not commas"));
        let span = parsed.errors[0].primary.as_ref().expect("a place").span;
        assert_eq!(span.start as usize, source.find(',').expect("a comma"));
    }

    /// A block whose closer is missing is said at its opener (`^` marks it), once,
    /// wherever the parser noticed (the end of the input, another block's closer);
    /// when a closer indented less than the block's line closed it, the block is
    /// the one said, with the first line back at its indentation (`~` marks it).
    #[test]
    fn an_unclosed_block_is_said_at_its_opener() {
        for marked in [
            "{\n  a = ^{\n    b = 1;\n\n  ~c = 2;\n}\n",
            "{ a = ^[ 1 2 }",
            "{ a = ^[ 1\n  b = 2; }",
            "{ a = (f ^{ b = 1; ); }",
            "let a = 1; in ^(a",
            "^{\n  a = 1;\n",
            "{\n  shapes = ^[\n    (x)\n  ~b = 1;\n}\n",
            // a stray closer, and the end of input inside two blocks: said once
            "{ a = ^(1 + 2]); }",
            "{ a = ^{ b = 1;",
            // line breaks of Windows: the line back at the indentation is found
            "{\r\n  a = ^{\r\n    b = 1;\r\n\r\n  ~c = 2;\r\n}\r\n",
            // an interpolation left open: the quote after it opens a string that
            // runs to the end, which is not said as well (it was, at a later quote)
            "let\n  a = \"x ^${b\";\n  c = \"y\";\nin a\n",
            "''\n  x ^${f ''abc\n",
            "./a/^${b",
            // and when another `${` follows on a later line, where the parser stops
            "{\n  a = \"^${x\";\n  b = \"${y}\";\n}\n",
            // and on one line, where the next `${` stands in its `}`'s place
            "x: \"^${x\" + \"${x}\"",
        ] {
            let (at, source) = unmarked(marked, '^');
            let line = source.find('~');
            let source = source.replace('~', "");
            let parsed = parse(source.as_bytes(), FileId(0));
            assert_eq!(parsed.errors.len(), 1, "{marked}: {:?}", parsed.errors);
            let error = &parsed.errors[0];
            assert!(
                error.message.contains("is not closed"),
                "{marked}: {error:?}"
            );
            let span = error.primary.as_ref().expect("a place").span;
            assert_eq!(span.start as usize, at, "{marked}: {error:?}");
            if source[at..].starts_with("${") {
                // its `}` belongs on its own line, not where indentation comes back
                assert!(
                    !error
                        .secondary
                        .iter()
                        .any(|label| label.message.contains("probably belongs before")),
                    "{marked}: {error:?}"
                );
            }
            if let Some(line) = line {
                assert!(
                    error
                        .secondary
                        .iter()
                        .any(|label| label.span.start as usize == line
                            && label.message.contains("probably belongs before")),
                    "{marked}: {error:?}"
                );
            }
        }
    }

    /// A plain string (one token) parses as the string rules parse it: a literal
    /// part (none when empty) under the span of both quotes, and a static name.
    #[test]
    fn plain_strings_parse_as_strings() {
        let expr = parse_ok(r#"{ "k" = "v"; e = ""; d = "a$b"; }"#);
        let ExprKind::Attrs { bindings, .. } = expr.kind else {
            panic!("a set: {expr:?}");
        };
        let values: Vec<(&[AttrName], &Expr)> = bindings
            .iter()
            .map(|binding| match binding {
                Binding::Assign { path, value, .. } => (path.as_slice(), value),
                Binding::Inherit { .. } => panic!("no inherit"),
            })
            .collect();
        assert_eq!(
            values[0].0,
            [AttrName::Static {
                name: b"k".to_vec(),
                span: Span::new(FileId(0), 2, 5)
            }]
        );
        assert_eq!(values[0].1.span, Span::new(FileId(0), 8, 11));
        assert_eq!(
            values[0].1.kind,
            ExprKind::String(StringParts::from_vec(vec![StringPart::Literal(
                b"v".to_vec()
            )]))
        );
        assert_eq!(values[1].1.kind, ExprKind::String(StringParts::new()));
        assert_eq!(values[1].1.span, Span::new(FileId(0), 17, 19));
        // `$` takes the string rules: the same shape
        assert_eq!(
            values[2].1.kind,
            ExprKind::String(StringParts::from_vec(vec![StringPart::Literal(
                b"a$b".to_vec()
            )]))
        );
    }

    /// What is said at a plain string that is not wanted there is said at its
    /// opening quote, as it was when a string was three tokens: the message, the
    /// span, and the trees built from the span (an error node, a binding's span).
    #[test]
    fn errors_at_a_plain_string_point_at_its_opening_quote() {
        for (source, quote) in [
            (r#"rec"a""#, 3),
            (r#"{ a, "b" }: a"#, 5),
            (r#"a ? b "c""#, 6),
            (r#"{ a = x ? y "z"; }"#, 12),
        ] {
            let parsed = parse(source.as_bytes(), FileId(0));
            let first = parsed.errors.first().expect("a syntax error");
            assert!(
                first.message.contains("unexpected `\"`"),
                "{source}: {first:?}"
            );
            let span = first.primary.as_ref().expect("a place").span;
            assert_eq!(span, Span::new(FileId(0), quote, quote + 1), "{source}");
        }
        // the binding ends at the quote, where the error node does
        let parsed = parse(br#"{ a = x ? y "z"; }"#, FileId(0));
        let ExprKind::Attrs { bindings, .. } = parsed.expr.kind else {
            panic!("a set: {:?}", parsed.expr);
        };
        let Binding::Assign { span, .. } = &bindings[0] else {
            panic!("a binding: {bindings:?}");
        };
        assert_eq!(*span, Span::new(FileId(0), 2, 13));
        // the nesting limit is reported at the quote too
        let depth = MAX_NESTING - 2;
        let deep = format!("{} \"s\" {}", "[".repeat(depth), "]".repeat(depth));
        let parsed = std::thread::Builder::new()
            .stack_size(256 * 1024 * 1024)
            .spawn(move || parse(deep.as_bytes(), FileId(0)))
            .expect("a thread")
            .join()
            .expect("parsed");
        let nested = parsed
            .errors
            .iter()
            .find(|error| error.code == codes::NESTED_TOO_DEEPLY)
            .expect("E006");
        let at = nested.primary.as_ref().expect("a place").span;
        assert_eq!(at, Span::new(FileId(0), depth + 1, depth + 2), "{nested:?}");
    }

    /// A literal alone (a binding's value before `;`, a list's item not selected
    /// from) parses as it does through every layer; one followed by `.` or `or`
    /// still takes them.
    #[test]
    fn literals_alone_parse_as_through_the_layers() {
        let source = r#"{ a = 1; b = [ 2 "x" 2.5 ]; c = [ "s".t ]; d = [ "u" or ]; e = 3 + 4; }"#;
        let expr = parse_ok(source);
        let ExprKind::Attrs { bindings, .. } = expr.kind else {
            panic!("a set: {expr:?}");
        };
        let at = |text: &str| {
            let start = source.find(text).expect("in the source");
            Span::new(FileId(0), start, start + text.len())
        };
        let value = |index: usize| match &bindings[index] {
            Binding::Assign { value, .. } => value,
            Binding::Inherit { .. } => panic!("no inherit"),
        };
        assert_eq!(value(0).kind, ExprKind::Integer(1));
        assert_eq!(value(0).span, at("1"));
        let ExprKind::List(items) = &value(1).kind else {
            panic!("a list: {:?}", value(1));
        };
        assert_eq!(items[0].kind, ExprKind::Integer(2));
        let two = at("2 \"x\"");
        assert_eq!(
            items[0].span,
            Span::new(FileId(0), two.start as usize, two.start as usize + 1)
        );
        assert!(matches!(&items[1].kind, ExprKind::String(parts) if parts.len() == 1));
        assert_eq!(items[1].span, at("\"x\""));
        assert_eq!(items[2].kind, ExprKind::Float(2.5));
        let ExprKind::List(items) = &value(2).kind else {
            panic!("a list: {:?}", value(2));
        };
        assert!(
            matches!(&items[0].kind, ExprKind::Select { .. }),
            "{items:?}"
        );
        let ExprKind::List(items) = &value(3).kind else {
            panic!("a list: {:?}", value(3));
        };
        assert!(
            matches!(&items[0].kind, ExprKind::Apply { .. }),
            "{items:?}"
        );
        assert!(
            matches!(&value(4).kind, ExprKind::Binary { .. }),
            "{:?}",
            value(4)
        );
    }

    #[test]
    fn precedence_follows_nix() {
        // `!a && b` is `(!a) && b`; `!a + b` is `!(a + b)`
        let expr = parse_ok("!a && b");
        assert!(matches!(
            expr.kind,
            ExprKind::Binary {
                op: BinaryOp::And,
                ..
            }
        ));
        let expr = parse_ok("!a + b");
        assert!(matches!(
            expr.kind,
            ExprKind::Unary {
                op: UnaryOp::Not,
                ..
            }
        ));
        let expr = parse_ok("-a * b");
        assert!(matches!(
            expr.kind,
            ExprKind::Binary {
                op: BinaryOp::Multiply,
                ..
            }
        ));
        let expr = parse_ok("a -> b -> c");
        match expr.kind {
            ExprKind::Binary {
                op: BinaryOp::Implies,
                right,
                ..
            } => {
                assert!(matches!(
                    right.kind,
                    ExprKind::Binary {
                        op: BinaryOp::Implies,
                        ..
                    }
                ))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn several_errors_are_reported_at_once() {
        let parsed = parse(b"{ a = ; b = 2; c = ; }", FileId(0));
        assert_eq!(parsed.errors.len(), 2, "{:?}", parsed.errors);
    }

    /// Found by the `parse` fuzz target: `{)` looped forever, adding an error per turn.
    #[test]
    fn stray_closer_in_bindings_ends_parsing() {
        for source in [
            "{)",
            "{ a = 1; ) }",
            "{ in }",
            "let a = 1; ) in a",
            "rec { ] }",
        ] {
            let parsed = parse(source.as_bytes(), FileId(0));
            assert!(!parsed.errors.is_empty(), "{source}");
            assert!(parsed.errors.len() <= 3, "{source}: {:?}", parsed.errors);
        }
    }

    #[test]
    fn chained_comparison_is_an_error() {
        let parsed = parse(b"1 < 2 < 3", FileId(0));
        assert_eq!(parsed.errors.len(), 1);
    }

    #[test]
    fn deep_nesting_ends_in_a_diagnostic() {
        let source = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
        let parsed = std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(move || parse(source.as_bytes(), FileId(0)).errors)
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(parsed[0].code, codes::NESTED_TOO_DEEPLY);
    }
}
