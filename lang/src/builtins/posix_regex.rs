//! A port of the regular-expression engine Nix 2.8 runs: libstdc++'s `std::regex`
//! with `std::regex::extended`, compiled to the same automaton (states for groups,
//! repeats, alternatives) and run by the same depth-first executor, including its
//! quirks: POSIX "longest match" only across alternatives, a repeated group entered
//! at most twice at one position, and no exit from a repeat once a match is found.
//! The executor is iterative (no recursion per character) and counts its steps;
//! past its budget it gives up and the caller falls back to an automaton.
//! Pure: bytes in, positions out.

/// The code of the ASCII character a collating name (`[[.tab.]]`, `[[=a=]]`) names.
pub(super) fn collating_code(name: &[u8]) -> Option<u8> {
    COLLATING_NAMES
        .iter()
        .position(|known| known.as_bytes() == name)
        .and_then(|code| u8::try_from(code).ok())
}

/// libstdc++'s `_GLIBCXX_REGEX_STATE_LIMIT`: more states is "memory limit exceeded".
const STATE_LIMIT: usize = 100_000;

/// The POSIX names libstdc++ accepts in `[[.name.]]` and `[[=name=]]`, by code.
const COLLATING_NAMES: [&str; 128] = [
    "NUL",
    "SOH",
    "STX",
    "ETX",
    "EOT",
    "ENQ",
    "ACK",
    "alert",
    "backspace",
    "tab",
    "newline",
    "vertical-tab",
    "form-feed",
    "carriage-return",
    "SO",
    "SI",
    "DLE",
    "DC1",
    "DC2",
    "DC3",
    "DC4",
    "NAK",
    "SYN",
    "ETB",
    "CAN",
    "EM",
    "SUB",
    "ESC",
    "IS4",
    "IS3",
    "IS2",
    "IS1",
    "space",
    "exclamation-mark",
    "quotation-mark",
    "number-sign",
    "dollar-sign",
    "percent-sign",
    "ampersand",
    "apostrophe",
    "left-parenthesis",
    "right-parenthesis",
    "asterisk",
    "plus-sign",
    "comma",
    "hyphen",
    "period",
    "slash",
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "colon",
    "semicolon",
    "less-than-sign",
    "equals-sign",
    "greater-than-sign",
    "question-mark",
    "commercial-at",
    "A",
    "B",
    "C",
    "D",
    "E",
    "F",
    "G",
    "H",
    "I",
    "J",
    "K",
    "L",
    "M",
    "N",
    "O",
    "P",
    "Q",
    "R",
    "S",
    "T",
    "U",
    "V",
    "W",
    "X",
    "Y",
    "Z",
    "left-square-bracket",
    "backslash",
    "right-square-bracket",
    "circumflex",
    "underscore",
    "grave-accent",
    "a",
    "b",
    "c",
    "d",
    "e",
    "f",
    "g",
    "h",
    "i",
    "j",
    "k",
    "l",
    "m",
    "n",
    "o",
    "p",
    "q",
    "r",
    "s",
    "t",
    "u",
    "v",
    "w",
    "x",
    "y",
    "z",
    "left-curly-bracket",
    "vertical-line",
    "right-curly-bracket",
    "tilde",
    "DEL",
];

/// A character class of the C locale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Alnum,
    Alpha,
    Blank,
    Cntrl,
    Digit,
    Graph,
    Lower,
    Print,
    Punct,
    Space,
    Upper,
    Xdigit,
    /// libstdc++'s `w`: alphanumeric or `_`.
    Word,
}

impl Class {
    fn named(name: &[u8]) -> Option<Class> {
        Some(match name {
            b"alnum" => Class::Alnum,
            b"alpha" => Class::Alpha,
            b"blank" => Class::Blank,
            b"cntrl" => Class::Cntrl,
            b"digit" | b"d" => Class::Digit,
            b"graph" => Class::Graph,
            b"lower" => Class::Lower,
            b"print" => Class::Print,
            b"punct" => Class::Punct,
            b"space" | b"s" => Class::Space,
            b"upper" => Class::Upper,
            b"xdigit" => Class::Xdigit,
            b"w" => Class::Word,
            _ => return None,
        })
    }

    fn contains(self, byte: u8) -> bool {
        match self {
            Class::Alnum => byte.is_ascii_alphanumeric(),
            Class::Alpha => byte.is_ascii_alphabetic(),
            Class::Blank => byte == b' ' || byte == b'\t',
            Class::Cntrl => byte.is_ascii_control(),
            Class::Digit => byte.is_ascii_digit(),
            Class::Graph => byte.is_ascii_graphic(),
            Class::Lower => byte.is_ascii_lowercase(),
            Class::Print => byte.is_ascii_graphic() || byte == b' ',
            Class::Punct => byte.is_ascii_punctuation(),
            Class::Space => matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c),
            Class::Upper => byte.is_ascii_uppercase(),
            Class::Xdigit => byte.is_ascii_hexdigit(),
            Class::Word => byte.is_ascii_alphanumeric() || byte == b'_',
        }
    }
}

/// A bracket expression. Ranges compare bytes as C's (signed) `char`.
#[derive(Clone, Debug, Default)]
struct Bracket {
    negated: bool,
    bytes: Vec<u8>,
    ranges: Vec<(i8, i8)>,
    classes: Vec<Class>,
    /// Lower-cased: an equivalence class matches either case.
    equivalents: Vec<u8>,
}

impl Bracket {
    fn matches(&self, byte: u8) -> bool {
        let signed = byte as i8;
        let found = self.bytes.contains(&byte)
            || self
                .ranges
                .iter()
                .any(|(low, high)| *low <= signed && signed <= *high)
            || self.classes.iter().any(|class| class.contains(byte))
            || self.equivalents.contains(&byte.to_ascii_lowercase());
        found != self.negated
    }
}

#[derive(Clone, Debug)]
enum Matcher {
    Byte(u8),
    /// `.`: any byte but NUL.
    Any,
    Bracket(Box<Bracket>),
}

impl Matcher {
    fn matches(&self, byte: u8) -> bool {
        match self {
            Matcher::Byte(expected) => byte == *expected,
            Matcher::Any => byte != 0,
            Matcher::Bracket(bracket) => bracket.matches(byte),
        }
    }
}

type StateId = usize;
const NONE: StateId = usize::MAX;

#[derive(Clone, Debug)]
enum Opcode {
    /// Tries `alt` (the left branch) and then `next`, keeping the longer match.
    Alternative,
    /// Greedy: once more through `alt`, then (if no match was found) out by `next`.
    Repeat,
    SubexprBegin(usize),
    SubexprEnd(usize),
    LineBegin,
    LineEnd,
    Match(Matcher),
    Accept,
    Dummy,
}

#[derive(Clone, Debug)]
struct State {
    opcode: Opcode,
    next: StateId,
    alt: StateId,
}

/// A sequence of states from `start` to `end` (whose `next` is still open).
#[derive(Clone, Copy, Debug)]
struct Sequence {
    start: StateId,
    end: StateId,
}

/// A compiled pattern.
#[derive(Debug)]
pub struct Program {
    states: Vec<State>,
    start: StateId,
    /// Groups, the whole match (group 0) included.
    pub groups: usize,
}

struct Compiler<'a> {
    pattern: &'a [u8],
    position: usize,
    states: Vec<State>,
    stack: Vec<Sequence>,
    groups: usize,
    open_groups: Vec<usize>,
}

pub type CompileError = String;

impl Compiler<'_> {
    fn insert(
        &mut self,
        opcode: Opcode,
        next: StateId,
        alt: StateId,
    ) -> Result<StateId, CompileError> {
        self.states.push(State { opcode, next, alt });
        if self.states.len() > STATE_LIMIT {
            return Err("memory limit exceeded by the regular expression".into());
        }
        Ok(self.states.len() - 1)
    }

    fn single(&mut self, opcode: Opcode) -> Result<Sequence, CompileError> {
        let id = self.insert(opcode, NONE, NONE)?;
        Ok(Sequence { start: id, end: id })
    }

    fn append(&mut self, sequence: &mut Sequence, state: StateId) {
        self.states[sequence.end].next = state;
        sequence.end = state;
    }

    fn append_sequence(&mut self, sequence: &mut Sequence, other: Sequence) {
        self.states[sequence.end].next = other.start;
        sequence.end = other.end;
    }

    /// libstdc++'s `_StateSeq::_M_clone`: a copy of the states between start and
    /// end (following `next` and `alt`), with the same groups.
    fn clone_sequence(&mut self, sequence: Sequence) -> Result<Sequence, CompileError> {
        let mut mapping: std::collections::HashMap<StateId, StateId> =
            std::collections::HashMap::new();
        let mut pending = vec![sequence.start];
        while let Some(id) = pending.pop() {
            if mapping.contains_key(&id) {
                continue;
            }
            let copy = self.states[id].clone();
            let new_id = self.insert(copy.opcode.clone(), copy.next, copy.alt)?;
            mapping.insert(id, new_id);
            // as libstdc++: the end's `alt` is followed, its `next` is not
            if copy.alt != NONE && !mapping.contains_key(&copy.alt) {
                pending.push(copy.alt);
            }
            if id == sequence.end {
                continue;
            }
            if copy.next != NONE && !mapping.contains_key(&copy.next) {
                pending.push(copy.next);
            }
        }
        for new_id in mapping.values().copied().collect::<Vec<_>>() {
            let state = &mut self.states[new_id];
            if let Some(mapped) = mapping.get(&state.next) {
                state.next = *mapped;
            }
            if let Some(mapped) = mapping.get(&state.alt) {
                state.alt = *mapped;
            }
        }
        Ok(Sequence {
            start: mapping[&sequence.start],
            end: mapping[&sequence.end],
        })
    }

    fn peek(&self) -> Option<u8> {
        self.pattern.get(self.position).copied()
    }

    fn pop(&mut self) -> Sequence {
        self.stack.pop().unwrap_or(Sequence { start: 0, end: 0 })
    }

    fn disjunction(&mut self) -> Result<(), CompileError> {
        self.alternative()?;
        while self.peek() == Some(b'|') {
            self.position += 1;
            let left = self.pop();
            self.alternative()?;
            let mut right = self.pop();
            let end = self.insert(Opcode::Dummy, NONE, NONE)?;
            let mut left_end = left;
            self.append(&mut left_end, end);
            self.append(&mut right, end);
            let branch = self.insert(Opcode::Alternative, right.start, left.start)?;
            self.stack.push(Sequence { start: branch, end });
        }
        Ok(())
    }

    fn alternative(&mut self) -> Result<(), CompileError> {
        // terms, right to left as libstdc++ recurses, appended in order
        let mut terms = Vec::new();
        while self.term()? {
            terms.push(self.pop());
        }
        // each alternative ends in a dummy state, as libstdc++ builds it
        let tail = self.single(Opcode::Dummy)?;
        let sequence = match terms.split_first() {
            Some((first, rest)) => {
                let mut sequence = *first;
                for term in rest {
                    self.append_sequence(&mut sequence, *term);
                }
                self.append_sequence(&mut sequence, tail);
                sequence
            }
            None => tail,
        };
        self.stack.push(sequence);
        Ok(())
    }

    fn term(&mut self) -> Result<bool, CompileError> {
        match self.peek() {
            Some(b'^') => {
                self.position += 1;
                let sequence = self.single(Opcode::LineBegin)?;
                self.stack.push(sequence);
                return Ok(true);
            }
            Some(b'$') => {
                self.position += 1;
                let sequence = self.single(Opcode::LineEnd)?;
                self.stack.push(sequence);
                return Ok(true);
            }
            _ => {}
        }
        if !self.atom()? {
            return Ok(false);
        }
        while self.quantifier()? {}
        Ok(true)
    }

    fn atom(&mut self) -> Result<bool, CompileError> {
        let Some(byte) = self.peek() else {
            return Ok(false);
        };
        match byte {
            b'.' => {
                self.position += 1;
                let sequence = self.single(Opcode::Match(Matcher::Any))?;
                self.stack.push(sequence);
            }
            b'\\' => {
                self.position += 1;
                let Some(escaped) = self.peek() else {
                    return Err("the pattern ends with `\\`".into());
                };
                if !b".[\\()*+?{|^$".contains(&escaped) {
                    return Err(format!(
                        "`\\{}` is not an escape of POSIX extended regular expressions",
                        String::from_utf8_lossy(&[escaped])
                    ));
                }
                self.position += 1;
                let sequence = self.single(Opcode::Match(Matcher::Byte(escaped)))?;
                self.stack.push(sequence);
            }
            b'(' => {
                self.position += 1;
                let group = self.groups;
                self.groups += 1;
                self.open_groups.push(group);
                let mut sequence = self.single(Opcode::SubexprBegin(group))?;
                self.disjunction()?;
                if self.peek() != Some(b')') {
                    return Err("unbalanced parentheses".into());
                }
                self.position += 1;
                let inner = self.pop();
                self.append_sequence(&mut sequence, inner);
                self.open_groups.pop();
                let end = self.insert(Opcode::SubexprEnd(group), NONE, NONE)?;
                self.append(&mut sequence, end);
                self.stack.push(sequence);
            }
            b'[' => {
                self.position += 1;
                let bracket = self.bracket()?;
                let sequence = self.single(Opcode::Match(Matcher::Bracket(Box::new(bracket))))?;
                self.stack.push(sequence);
            }
            b')' | b'|' | b'*' | b'+' | b'?' | b'{' => return Ok(false),
            other => {
                self.position += 1;
                let sequence = self.single(Opcode::Match(Matcher::Byte(other)))?;
                self.stack.push(sequence);
            }
        }
        Ok(true)
    }

    fn number(&mut self) -> Option<i64> {
        let begin = self.position;
        let mut value: i64 = 0;
        while let Some(digit @ b'0'..=b'9') = self.peek() {
            value = value
                .checked_mul(10)?
                .checked_add(i64::from(digit - b'0'))?;
            self.position += 1;
        }
        (self.position > begin).then_some(value)
    }

    fn quantifier(&mut self) -> Result<bool, CompileError> {
        match self.peek() {
            Some(b'*') => {
                self.position += 1;
                let mut body = self.pop();
                let repeat = self.insert(Opcode::Repeat, NONE, body.start)?;
                self.append(&mut body, repeat);
                self.stack.push(Sequence {
                    start: repeat,
                    end: repeat,
                });
            }
            Some(b'+') => {
                self.position += 1;
                let mut body = self.pop();
                let repeat = self.insert(Opcode::Repeat, NONE, body.start)?;
                self.append(&mut body, repeat);
                self.stack.push(body);
            }
            Some(b'?') => {
                self.position += 1;
                let mut body = self.pop();
                let end = self.insert(Opcode::Dummy, NONE, NONE)?;
                let repeat = self.insert(Opcode::Repeat, NONE, body.start)?;
                self.append(&mut body, end);
                let mut sequence = Sequence {
                    start: repeat,
                    end: repeat,
                };
                self.append(&mut sequence, end);
                self.stack.push(sequence);
            }
            Some(b'{') => {
                self.position += 1;
                let Some(minimum) = self.number() else {
                    return Err("invalid repetition count `{`".into());
                };
                let mut infinite = false;
                let mut extra: i64 = 0;
                if self.peek() == Some(b',') {
                    self.position += 1;
                    match self.number() {
                        Some(maximum) => extra = maximum - minimum,
                        None if matches!(self.peek(), Some(b'0'..=b'9')) => {
                            return Err("invalid repetition count".into());
                        }
                        None => infinite = true,
                    }
                }
                if self.peek() != Some(b'}') {
                    return Err("unclosed repetition count `{`".into());
                }
                self.position += 1;
                let body = self.pop();
                let mut sequence = self.single(Opcode::Dummy)?;
                for _ in 0..minimum {
                    let copy = self.clone_sequence(body)?;
                    self.append_sequence(&mut sequence, copy);
                }
                if infinite {
                    let mut copy = self.clone_sequence(body)?;
                    let repeat = self.insert(Opcode::Repeat, NONE, copy.start)?;
                    self.append(&mut copy, repeat);
                    self.append(&mut sequence, repeat);
                } else {
                    if extra < 0 {
                        return Err("invalid repetition count range".into());
                    }
                    let end = self.insert(Opcode::Dummy, NONE, NONE)?;
                    let mut optional = Vec::new();
                    for _ in 0..extra {
                        let copy = self.clone_sequence(body)?;
                        // built with next = the copy, alt = the end, then swapped
                        let repeat = self.insert(Opcode::Repeat, copy.start, end)?;
                        optional.push(repeat);
                        self.append_sequence(
                            &mut sequence,
                            Sequence {
                                start: repeat,
                                end: copy.end,
                            },
                        );
                    }
                    self.append(&mut sequence, end);
                    for repeat in optional {
                        let state = &mut self.states[repeat];
                        std::mem::swap(&mut state.next, &mut state.alt);
                    }
                }
                self.stack.push(sequence);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The name of `[:name:]`, `[.name.]` or `[=name=]`, after the delimiter.
    fn bracket_name(&mut self, delimiter: u8) -> Result<Vec<u8>, CompileError> {
        let start = self.position;
        while self.peek().is_some_and(|byte| byte != delimiter) {
            self.position += 1;
        }
        let name = self.pattern[start..self.position].to_vec();
        if self.peek() != Some(delimiter) || self.pattern.get(self.position + 1) != Some(&b']') {
            return Err(if delimiter == b':' {
                "invalid character class".into()
            } else {
                "invalid collating element".into()
            });
        }
        self.position += 2;
        Ok(name)
    }

    fn collating(name: &[u8]) -> Result<u8, CompileError> {
        collating_code(name).ok_or_else(|| {
            format!(
                "unknown collating element `{}`",
                String::from_utf8_lossy(name)
            )
        })
    }

    /// libstdc++'s `_M_bracket_expression` (after the `[`).
    fn bracket(&mut self) -> Result<Bracket, CompileError> {
        enum Last {
            None,
            Byte(u8),
            Class,
        }
        enum Token {
            Byte(u8),
            Dash,
            End,
            Collating(Vec<u8>),
            Equivalence(Vec<u8>),
            Class(Vec<u8>),
        }
        let mut bracket = Bracket::default();
        if self.peek() == Some(b'^') {
            self.position += 1;
            bracket.negated = true;
        }
        let mut at_start = true;
        let mut next_token = |compiler: &mut Self| -> Result<Token, CompileError> {
            let Some(byte) = compiler.peek() else {
                return Err("unclosed bracket expression `[`".into());
            };
            compiler.position += 1;
            let token = match byte {
                b'-' => Token::Dash,
                b'[' => match compiler.peek() {
                    None => return Err("unclosed bracket expression `[`".into()),
                    Some(b'.') => {
                        compiler.position += 1;
                        Token::Collating(compiler.bracket_name(b'.')?)
                    }
                    Some(b':') => {
                        compiler.position += 1;
                        Token::Class(compiler.bracket_name(b':')?)
                    }
                    Some(b'=') => {
                        compiler.position += 1;
                        Token::Equivalence(compiler.bracket_name(b'=')?)
                    }
                    Some(_) => Token::Byte(b'['),
                },
                b']' if !at_start => Token::End,
                other => Token::Byte(other),
            };
            at_start = false;
            Ok(token)
        };
        let add_range = |bracket: &mut Bracket, low: u8, high: u8| -> Result<(), CompileError> {
            if (low as i8) > (high as i8) {
                return Err("invalid range in a bracket expression".into());
            }
            bracket.ranges.push((low as i8, high as i8));
            Ok(())
        };
        let mut last = Last::None;
        let mut token = next_token(self)?;
        // a first byte, or a first dash, is a plain character
        match token {
            Token::Byte(byte) => {
                last = Last::Byte(byte);
                token = next_token(self)?;
            }
            Token::Dash => {
                last = Last::Byte(b'-');
                token = next_token(self)?;
            }
            _ => {}
        }
        loop {
            let push_byte = |bracket: &mut Bracket, last: &mut Last, byte: u8| {
                if let Last::Byte(previous) = last {
                    bracket.bytes.push(*previous);
                }
                *last = Last::Byte(byte);
            };
            let push_class = |bracket: &mut Bracket, last: &mut Last| {
                if let Last::Byte(previous) = last {
                    bracket.bytes.push(*previous);
                }
                *last = Last::Class;
            };
            match token {
                Token::End => break,
                Token::Collating(name) => {
                    let byte = Self::collating(&name)?;
                    push_byte(&mut bracket, &mut last, byte);
                }
                Token::Equivalence(name) => {
                    let byte = Self::collating(&name)?;
                    push_class(&mut bracket, &mut last);
                    bracket.equivalents.push(byte.to_ascii_lowercase());
                }
                Token::Class(name) => {
                    let class = Class::named(&name).ok_or_else(|| {
                        format!(
                            "unknown character class `[:{}:]`",
                            String::from_utf8_lossy(&name)
                        )
                    })?;
                    push_class(&mut bracket, &mut last);
                    bracket.classes.push(class);
                }
                Token::Byte(byte) => push_byte(&mut bracket, &mut last, byte),
                Token::Dash => {
                    let after = next_token(self)?;
                    match (after, &last) {
                        (Token::End, _) => {
                            push_byte(&mut bracket, &mut last, b'-');
                            break;
                        }
                        (_, Last::Class) => {
                            return Err("a range cannot start with a class".into());
                        }
                        (Token::Byte(high), Last::Byte(low)) => {
                            add_range(&mut bracket, *low, high)?;
                            last = Last::None;
                        }
                        (Token::Dash, Last::Byte(low)) => {
                            add_range(&mut bracket, *low, b'-')?;
                            last = Last::None;
                        }
                        (_, Last::Byte(_)) => {
                            return Err("invalid end of a range in a bracket expression".into());
                        }
                        (_, Last::None) => {
                            return Err("invalid `-` in a bracket expression".into());
                        }
                    }
                }
            }
            token = next_token(self)?;
        }
        if let Last::Byte(byte) = last {
            bracket.bytes.push(byte);
        }
        Ok(bracket)
    }
}

/// Compiles a POSIX extended pattern as libstdc++ does, or says why it refuses it.
pub fn compile(pattern: &[u8]) -> Result<Program, CompileError> {
    let mut compiler = Compiler {
        pattern,
        position: 0,
        states: Vec::new(),
        stack: Vec::new(),
        groups: 1,
        open_groups: Vec::new(),
    };
    let mut program = compiler.single(Opcode::SubexprBegin(0))?;
    compiler.disjunction()?;
    if compiler.position < pattern.len() {
        return Err(match compiler.peek() {
            Some(b')') => "unbalanced parentheses".into(),
            Some(byte) => format!("nothing to repeat before `{}`", byte as char),
            None => "unexpected end".into(),
        });
    }
    let body = compiler.pop();
    compiler.append_sequence(&mut program, body);
    let end = compiler.insert(Opcode::SubexprEnd(0), NONE, NONE)?;
    compiler.append(&mut program, end);
    let accept = compiler.insert(Opcode::Accept, NONE, NONE)?;
    compiler.append(&mut program, accept);
    Ok(Program {
        states: compiler.states,
        start: program.start,
        groups: compiler.groups,
    })
}

/// A group's bounds: libstdc++'s `sub_match` (`first`, `second`, `matched`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Group {
    pub first: usize,
    pub second: usize,
    pub matched: bool,
}

/// How a search is constrained (`std::regex_constants::match_flag_type`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Flags {
    /// The search start is not the start of the subject: `^` does not match there.
    pub previous_available: bool,
    /// An empty match does not count.
    pub not_null: bool,
    /// The match must start at the search start.
    pub continuous: bool,
}

enum Task {
    Visit(StateId),
    RepeatExit(StateId),
    RestoreRepeatCount(StateId, (usize, u32)),
    DecrementRepeatCount(StateId),
    AlternativeRight(StateId),
    OrSolution(bool),
    RestoreGroup(usize, Group),
    StepBack,
}

/// The step budget of one search (a few tenths of a second); past it the executor
/// gives up and returns None. libstdc++ has no budget: such patterns take Nix as
/// long, or longer.
pub const STEP_BUDGET: u64 = 20_000_000;

struct Executor<'a> {
    program: &'a Program,
    subject: &'a [u8],
    begin: usize,
    current: usize,
    flags: Flags,
    exact: bool,
    has_solution: bool,
    solution_end: Option<usize>,
    current_groups: Vec<Group>,
    results: Vec<Group>,
    repeat_counts: Vec<(usize, u32)>,
    steps: u64,
}

impl Executor<'_> {
    fn at_begin(&self) -> bool {
        self.current == self.begin && !self.flags.previous_available
    }

    /// One depth-first search from `self.begin`; false if the budget ran out.
    fn run(&mut self) -> bool {
        self.has_solution = false;
        self.solution_end = None;
        self.current = self.begin;
        let mut tasks = vec![Task::Visit(self.program.start)];
        while let Some(task) = tasks.pop() {
            match task {
                Task::Visit(id) => {
                    self.steps += 1;
                    if self.steps > STEP_BUDGET {
                        return false;
                    }
                    let state = &self.program.states[id];
                    match &state.opcode {
                        Opcode::Repeat => {
                            tasks.push(Task::RepeatExit(state.next));
                            let count = self.repeat_counts[id];
                            if count.1 == 0 || count.0 != self.current {
                                self.repeat_counts[id] = (self.current, 1);
                                tasks.push(Task::RestoreRepeatCount(id, count));
                                tasks.push(Task::Visit(state.alt));
                            } else if count.1 < 2 {
                                self.repeat_counts[id].1 += 1;
                                tasks.push(Task::DecrementRepeatCount(id));
                                tasks.push(Task::Visit(state.alt));
                            }
                        }
                        Opcode::Alternative => {
                            tasks.push(Task::AlternativeRight(state.next));
                            tasks.push(Task::Visit(state.alt));
                        }
                        Opcode::SubexprBegin(group) => {
                            let saved = self.current_groups[*group];
                            self.current_groups[*group].first = self.current;
                            tasks.push(Task::RestoreGroup(*group, saved));
                            tasks.push(Task::Visit(state.next));
                        }
                        Opcode::SubexprEnd(group) => {
                            let saved = self.current_groups[*group];
                            self.current_groups[*group].second = self.current;
                            self.current_groups[*group].matched = true;
                            tasks.push(Task::RestoreGroup(*group, saved));
                            tasks.push(Task::Visit(state.next));
                        }
                        Opcode::LineBegin => {
                            if self.at_begin() {
                                tasks.push(Task::Visit(state.next));
                            }
                        }
                        Opcode::LineEnd => {
                            if self.current == self.subject.len() {
                                tasks.push(Task::Visit(state.next));
                            }
                        }
                        Opcode::Match(matcher) => {
                            if let Some(&byte) = self.subject.get(self.current)
                                && matcher.matches(byte)
                            {
                                self.current += 1;
                                tasks.push(Task::StepBack);
                                tasks.push(Task::Visit(state.next));
                            }
                        }
                        Opcode::Dummy => tasks.push(Task::Visit(state.next)),
                        Opcode::Accept => self.accept(),
                    }
                }
                Task::RepeatExit(next) => {
                    if !self.has_solution {
                        tasks.push(Task::Visit(next));
                    }
                }
                Task::RestoreRepeatCount(id, count) => self.repeat_counts[id] = count,
                Task::DecrementRepeatCount(id) => self.repeat_counts[id].1 -= 1,
                Task::AlternativeRight(next) => {
                    let had = self.has_solution;
                    self.has_solution = false;
                    tasks.push(Task::OrSolution(had));
                    tasks.push(Task::Visit(next));
                }
                Task::OrSolution(had) => self.has_solution |= had,
                Task::RestoreGroup(group, saved) => self.current_groups[group] = saved,
                Task::StepBack => self.current -= 1,
            }
        }
        true
    }

    fn accept(&mut self) {
        self.has_solution = if self.exact {
            self.current == self.subject.len()
        } else {
            true
        };
        if self.current == self.begin && self.flags.not_null {
            self.has_solution = false;
        }
        if self.has_solution && self.solution_end.is_none_or(|end| end < self.current) {
            self.solution_end = Some(self.current);
            self.results = self.current_groups.clone();
        }
    }
}

/// The result of a search: the groups (group 0 is the whole match), or no match,
/// or None when the executor gave up.
pub type SearchResult = Option<Option<Vec<Group>>>;

fn executor<'a>(
    program: &'a Program,
    subject: &'a [u8],
    begin: usize,
    flags: Flags,
    exact: bool,
) -> Executor<'a> {
    Executor {
        program,
        subject,
        begin,
        current: begin,
        flags,
        exact,
        has_solution: false,
        solution_end: None,
        current_groups: vec![Group::default(); program.groups],
        results: vec![Group::default(); program.groups],
        repeat_counts: vec![(usize::MAX, 0); program.states.len()],
        steps: 0,
    }
}

/// `std::regex_match`: the whole subject.
pub fn whole_match(program: &Program, subject: &[u8]) -> SearchResult {
    let mut executor = executor(program, subject, 0, Flags::default(), true);
    if !executor.run() {
        return None;
    }
    Some(executor.has_solution.then_some(executor.results))
}

/// `std::regex_search` from `begin`: the first start position with a match, and
/// there the match libstdc++'s executor reports.
pub fn search(program: &Program, subject: &[u8], begin: usize, flags: Flags) -> SearchResult {
    let mut executor = executor(program, subject, begin, flags, false);
    loop {
        if !executor.run() {
            return None;
        }
        if executor.has_solution {
            return Some(Some(executor.results));
        }
        if flags.continuous || executor.begin >= subject.len() {
            return Some(None);
        }
        executor.flags.previous_available = true;
        executor.begin += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(pattern: &str, subject: &str) -> Option<Vec<Option<String>>> {
        let program = compile(pattern.as_bytes()).unwrap();
        whole_match(&program, subject.as_bytes())
            .unwrap()
            .map(|groups| {
                groups[1..]
                    .iter()
                    .map(|group| {
                        group
                            .matched
                            .then(|| subject[group.first..group.second].to_string())
                    })
                    .collect()
            })
    }

    #[test]
    fn matches_like_libstdcxx() {
        assert_eq!(groups("(a*)+", "aa"), Some(vec![Some(String::new())]));
        assert_eq!(
            groups("(a|ab)(c|bcd)(d*)", "abcd"),
            Some(vec![
                Some("a".into()),
                Some("bcd".into()),
                Some(String::new())
            ])
        );
        assert_eq!(groups("(a)|b", "b"), Some(vec![None]));
        assert_eq!(groups("a{2,3}", "aaaa"), None);
        assert_eq!(groups("[[:alpha:]-]+", "a-b"), Some(vec![]));
    }

    #[test]
    fn refuses_what_libstdcxx_refuses() {
        for pattern in [
            "\\d",
            "(?:a)",
            "a{,2}",
            "^*",
            "[[:word:]]",
            "[a-c-e]",
            "a)",
            "(a",
            "[a",
            "a\\",
            "[[=a=]-z]",
            "a{3,2}",
        ] {
            assert!(compile(pattern.as_bytes()).is_err(), "{pattern}");
        }
        // libstdc++'s limit of 100,000 states, counted as it counts them
        assert!(compile(b"a{99993}").is_ok());
        assert!(compile(b"a{99994}").is_err());
        assert!(compile(b"(a{1000}){99}").is_err());
    }
}
