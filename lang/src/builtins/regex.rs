//! `match` and `split`: POSIX extended regular expressions as Nix 2.8 runs them
//! (libstdc++'s `std::regex` with `std::regex::extended`), translated to the `regex`
//! crate's syntax. The translation refuses what libstdc++ refuses (unknown escapes
//! such as `\d`, unknown classes, `(?`, a repeated anchor) and keeps POSIX meanings
//! (`\` is literal inside brackets, `.` is any byte but NUL, `a*?` is `(a*)?`).
//! `split` finds, like `std::regex_search` in POSIX mode, the leftmost match and of
//! those the longest; the groups come from the first way (in the order a
//! backtracking matcher tries them) to match exactly that text.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;

use regex_automata::hybrid::dfa::{Cache as DfaCache, DFA};
use regex_automata::{Anchored, Input, MatchKind};

use super::Builtin;
use super::posix_regex;
use crate::codes;
use crate::eval::{Machine, error};
use crate::span::Span;
use crate::value::{EvalResult, Value};

pub(super) fn builtins() -> Vec<Builtin> {
    vec![
        Builtin {
            name: "match",
            arity: 2,
            function: match_builtin,
        },
        Builtin {
            name: "split",
            arity: 2,
            function: split,
        },
    ]
}

/// The class names libstdc++ knows, with the `regex` crate's name for each.
const CLASSES: &[(&str, &str)] = &[
    ("alnum", "alnum"),
    ("alpha", "alpha"),
    ("blank", "blank"),
    ("cntrl", "cntrl"),
    ("digit", "digit"),
    ("graph", "graph"),
    ("lower", "lower"),
    ("print", "print"),
    ("punct", "punct"),
    ("space", "space"),
    ("upper", "upper"),
    ("xdigit", "xdigit"),
    ("d", "digit"),
    ("s", "space"),
    ("w", "word"),
];

/// Characters that `\` makes literal outside brackets in a POSIX extended pattern;
/// any other escape is an error in libstdc++ (which Nix builds in strict mode).
const ESCAPABLE: &[u8] = b".[\\()*+?{|^$";

fn push_literal(out: &mut String, byte: u8) {
    if byte.is_ascii_alphanumeric() {
        out.push(byte as char);
    } else {
        out.push_str(&format!("\\x{{{byte:02x}}}"));
    }
}

struct Translator<'a> {
    pattern: &'a [u8],
    position: usize,
    out: String,
    /// Emit `$` as an assertion that never holds (for searches in a shortened
    /// haystack whose end is not the real end).
    dollar_never: bool,
}

type Translated<T> = Result<T, String>;

impl Translator<'_> {
    fn peek(&self) -> Option<u8> {
        self.pattern.get(self.position).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<u8> {
        self.pattern.get(self.position + offset).copied()
    }

    fn alternation(&mut self) -> Translated<()> {
        self.concatenation()?;
        while self.peek() == Some(b'|') {
            self.position += 1;
            self.out.push('|');
            self.concatenation()?;
        }
        Ok(())
    }

    fn concatenation(&mut self) -> Translated<()> {
        while !matches!(self.peek(), None | Some(b'|' | b')')) {
            self.term()?;
        }
        Ok(())
    }

    fn term(&mut self) -> Translated<()> {
        let start = self.out.len();
        let repeatable = self.atom()?;
        let mut quantified = false;
        loop {
            let quantifier = match self.peek() {
                Some(b'*') => {
                    self.position += 1;
                    "*".to_string()
                }
                Some(b'+') => {
                    self.position += 1;
                    "+".to_string()
                }
                Some(b'?') => {
                    self.position += 1;
                    "?".to_string()
                }
                Some(b'{') => self.interval()?,
                _ => break,
            };
            if !repeatable {
                return Err("an anchor cannot be repeated".into());
            }
            if quantified {
                // POSIX has no lazy or possessive forms: `a*?` is `(a*)?`
                self.out.insert_str(start, "(?:");
                self.out.push(')');
            }
            self.out.push_str(&quantifier);
            quantified = true;
        }
        Ok(())
    }

    fn number(&mut self) -> Option<u32> {
        let begin = self.position;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.position += 1;
        }
        std::str::from_utf8(&self.pattern[begin..self.position])
            .ok()?
            .parse()
            .ok()
    }

    fn interval(&mut self) -> Translated<String> {
        self.position += 1;
        let Some(low) = self.number() else {
            return Err("`{` must start a repetition count such as `{2}` or `{2,5}`".into());
        };
        let high = if self.peek() == Some(b',') {
            self.position += 1;
            if matches!(self.peek(), Some(b'0'..=b'9')) {
                let Some(high) = self.number() else {
                    return Err("repetition count out of range".into());
                };
                Some(Some(high))
            } else {
                Some(None)
            }
        } else {
            None
        };
        if self.peek() != Some(b'}') {
            return Err("unclosed repetition count".into());
        }
        self.position += 1;
        Ok(match high {
            None => format!("{{{low}}}"),
            Some(None) => format!("{{{low},}}"),
            Some(Some(high)) if high < low => {
                return Err("repetition count range is reversed".into());
            }
            Some(Some(high)) => format!("{{{low},{high}}}"),
        })
    }

    /// Translates one atom; returns whether it may be repeated.
    fn atom(&mut self) -> Translated<bool> {
        let Some(byte) = self.peek() else {
            return Err("unexpected end of pattern".into());
        };
        self.position += 1;
        match byte {
            b'(' => {
                if matches!(self.peek(), Some(b'*' | b'+' | b'?' | b'{')) {
                    return Err("nothing to repeat after `(`".into());
                }
                self.out.push('(');
                self.alternation()?;
                if self.peek() != Some(b')') {
                    return Err("unclosed group `(`".into());
                }
                self.position += 1;
                self.out.push(')');
                Ok(true)
            }
            b'*' | b'+' | b'?' | b'{' => {
                Err(format!("nothing to repeat before `{}`", byte as char))
            }
            b'^' => {
                self.out.push('^');
                Ok(false)
            }
            b'$' => {
                self.out
                    .push_str(if self.dollar_never { r"(?:\b\B)" } else { "$" });
                Ok(false)
            }
            b'.' => {
                self.out.push_str(r"[^\x00]");
                Ok(true)
            }
            b'[' => {
                self.bracket()?;
                Ok(true)
            }
            b'\\' => match self.peek() {
                Some(next) if ESCAPABLE.contains(&next) => {
                    self.position += 1;
                    push_literal(&mut self.out, next);
                    Ok(true)
                }
                Some(next) => Err(format!(
                    "`\\{}` is not an escape of POSIX extended regular expressions",
                    String::from_utf8_lossy(&[next])
                )),
                None => Err("the pattern ends with `\\`".into()),
            },
            other => {
                push_literal(&mut self.out, other);
                Ok(true)
            }
        }
    }

    /// `[:name:]`, `[.name.]` or `[=name=]` after the `[`; the delimiter is next.
    fn bracket_special(&mut self) -> Translated<BracketItem> {
        let delimiter = self.pattern[self.position + 1];
        let start = self.position + 2;
        let close = self.pattern[start..]
            .windows(2)
            .position(|window| window[0] == delimiter && window[1] == b']')
            .map(|offset| start + offset)
            .ok_or_else(|| "unclosed `[:`, `[.` or `[=` in a bracket expression".to_string())?;
        let name = String::from_utf8_lossy(&self.pattern[start..close]).into_owned();
        self.position = close + 2;
        if delimiter == b':' {
            return CLASSES
                .iter()
                .find(|(posix, _)| *posix == name)
                .map(|(_, ours)| BracketItem::Class(ours))
                .ok_or_else(|| format!("unknown character class `[:{name}:]`"));
        }
        posix_regex::collating_code(name.as_bytes())
            .map(BracketItem::Byte)
            .ok_or_else(|| format!("unknown collating element `{name}`"))
    }

    fn bracket_item(&mut self) -> Translated<BracketItem> {
        let Some(byte) = self.peek() else {
            return Err("unclosed bracket expression `[`".into());
        };
        if byte == b'[' && matches!(self.peek_at(1), Some(b':' | b'.' | b'=')) {
            return self.bracket_special();
        }
        self.position += 1;
        Ok(BracketItem::Byte(byte))
    }

    fn bracket(&mut self) -> Translated<()> {
        let mut class = String::from("[");
        if self.peek() == Some(b'^') {
            self.position += 1;
            class.push('^');
        }
        let mut first = true;
        loop {
            match self.peek() {
                None => return Err("unclosed bracket expression `[`".into()),
                Some(b']') if !first => {
                    self.position += 1;
                    break;
                }
                _ => {}
            }
            first = false;
            let item = self.bracket_item()?;
            let is_range =
                self.peek() == Some(b'-') && !matches!(self.peek_at(1), Some(b']') | None);
            match (item, is_range) {
                (BracketItem::Class(name), false) => {
                    class.push_str(&format!("[:{name}:]"));
                }
                (BracketItem::Class(_), true) => {
                    return Err("a character class cannot start a range".into());
                }
                (BracketItem::Byte(byte), false) => {
                    class.push_str(&format!("\\x{{{byte:02x}}}"));
                }
                (BracketItem::Byte(low), true) => {
                    self.position += 1;
                    if self.peek() == Some(b'[')
                        && matches!(self.peek_at(1), Some(b':' | b'.' | b'='))
                    {
                        // libstdc++ takes a collating element only as a range's start
                        return Err("a range must end with a plain character".into());
                    }
                    let BracketItem::Byte(high) = self.bracket_item()? else {
                        return Err("a character class cannot end a range".into());
                    };
                    if high < low {
                        return Err("range out of order in a bracket expression".into());
                    }
                    class.push_str(&format!("\\x{{{low:02x}}}-\\x{{{high:02x}}}"));
                    if self.peek() == Some(b'-') && !matches!(self.peek_at(1), Some(b']')) {
                        return Err("`-` after a range must end the bracket expression".into());
                    }
                }
            }
        }
        class.push(']');
        self.out.push_str(&class);
        Ok(())
    }
}

enum BracketItem {
    Byte(u8),
    Class(&'static str),
}

/// The POSIX extended `pattern` in the `regex` crate's syntax, or why libstdc++
/// would refuse it.
pub fn translate(pattern: &[u8]) -> Result<String, String> {
    translate_with(pattern, false)
}

fn translate_with(pattern: &[u8], dollar_never: bool) -> Result<String, String> {
    let mut translator = Translator {
        pattern,
        position: 0,
        out: String::with_capacity(pattern.len() * 2),
        dollar_never,
    };
    translator.alternation()?;
    if translator.position < pattern.len() {
        return Err("unmatched `)`".into());
    }
    Ok(translator.out)
}

/// One pattern, compiled for the searches `match` and `split` make: libstdc++'s
/// automaton (the reference), and the `regex` crate's for when the reference
/// executor runs past its step budget (a pattern that backtracks exponentially, or
/// a long subject).
pub(crate) struct Compiled {
    program: posix_regex::Program,
    fallback: Option<Fallback>,
}

/// The automaton-based search: POSIX leftmost-longest, groups from the first way to
/// match that text. It differs from libstdc++ only in its quirks.
struct Fallback {
    pattern: Vec<u8>,
    translated: String,
    /// `^(?:P)$`: `match`.
    whole: regex::bytes::Regex,
    /// `P`: where the leftmost match starts.
    search: regex::bytes::Regex,
    /// A DFA reporting the longest match from a given start.
    longest: OnceCell<Option<(DFA, RefCell<DfaCache>)>>,
    /// `(?:P)$`, run on the haystack cut at a match's end: the groups of that match.
    groups_at_end: OnceCell<Option<regex::bytes::Regex>>,
    /// The same with the pattern's own `$` never holding (the cut is not the end).
    groups_before_end: OnceCell<Option<regex::bytes::Regex>>,
}

fn build(source: &str) -> Result<regex::bytes::Regex, regex::Error> {
    regex::bytes::RegexBuilder::new(source)
        .unicode(false)
        .size_limit(1 << 24)
        .build()
}

impl Fallback {
    fn new(pattern: &[u8]) -> Option<Fallback> {
        let translated = translate(pattern).ok()?;
        Some(Fallback {
            pattern: pattern.to_vec(),
            whole: build(&format!("^(?:{translated})$")).ok()?,
            search: build(&translated).ok()?,
            translated,
            longest: OnceCell::new(),
            groups_at_end: OnceCell::new(),
            groups_before_end: OnceCell::new(),
        })
    }

    fn longest_end(&self, subject: &[u8], start: usize) -> Option<usize> {
        let longest = self.longest.get_or_init(|| {
            let dfa = DFA::builder()
                .configure(DFA::config().match_kind(MatchKind::All))
                .syntax(
                    regex_automata::util::syntax::Config::new()
                        .unicode(false)
                        .utf8(false),
                )
                .thompson(regex_automata::nfa::thompson::Config::new().utf8(false))
                .build(&self.translated)
                .ok()?;
            let cache = dfa.create_cache();
            Some((dfa, RefCell::new(cache)))
        });
        let (dfa, cache) = longest.as_ref()?;
        let input = Input::new(subject).range(start..).anchored(Anchored::Yes);
        dfa.try_search_fwd(&mut cache.borrow_mut(), &input)
            .ok()
            .flatten()
            .map(|half| half.offset())
    }

    /// The groups of the match of exactly `start..end`, found the way a
    /// backtracking matcher finds them.
    fn groups(&self, subject: &[u8], start: usize, end: usize) -> Option<Value> {
        let cell = if end == subject.len() {
            &self.groups_at_end
        } else {
            &self.groups_before_end
        };
        let regex = cell.get_or_init(|| {
            let translated = translate_with(&self.pattern, end != subject.len()).ok()?;
            build(&format!("(?:{translated})$")).ok()
        });
        let captures = regex.as_ref()?.captures_at(&subject[..end], start)?;
        (captures.get(0)?.start() == start).then(|| groups(&captures))
    }

    /// The next match at or after `position`: leftmost, then longest. With
    /// `continuous`, only a non-empty match starting at `position` counts.
    fn find(
        &self,
        subject: &[u8],
        position: usize,
        continuous: bool,
    ) -> Option<(usize, usize, Value)> {
        let start = if continuous {
            position
        } else {
            self.search.find_at(subject, position)?.start()
        };
        let end = match self.longest_end(subject, start) {
            Some(end) => end,
            // the lazy DFA gave up: take the leftmost-first match
            None if !continuous => self.search.find_at(subject, start)?.end(),
            None => return None,
        };
        if continuous && end == start {
            return None;
        }
        let groups = match self.groups(subject, start, end) {
            Some(groups) => groups,
            None => groups(&self.search.captures_at(subject, start)?),
        };
        Some((start, end, groups))
    }
}

fn invalid_regex(pattern: &[u8], detail: &str, span: Span) -> Box<crate::diagnostic::Diagnostic> {
    error(
        codes::INVALID_REGEX,
        format!(
            "invalid regular expression `{}`: {detail}",
            String::from_utf8_lossy(pattern)
        ),
        span,
        "used here",
        "patterns are POSIX extended regular expressions: escape special characters with `\\\\`, use classes such as `[[:digit:]]` instead of `\\d`",
    )
}

fn too_expensive(pattern: &[u8], span: Span) -> Box<crate::diagnostic::Diagnostic> {
    error(
        codes::BUDGET_EXCEEDED,
        format!(
            "the regular expression `{}` takes too many steps on this string",
            String::from_utf8_lossy(pattern)
        ),
        span,
        "matched here",
        "simplify the pattern: nested repetitions such as `(a*)*` make matching exponential",
    )
}

fn compile(machine: &mut Machine, pattern: &[u8], span: Span) -> EvalResult<Rc<Compiled>> {
    if let Some(compiled) = machine.regex_cache.get(pattern) {
        return Ok(compiled.clone());
    }
    let program =
        posix_regex::compile(pattern).map_err(|detail| invalid_regex(pattern, &detail, span))?;
    let compiled = Rc::new(Compiled {
        program,
        fallback: Fallback::new(pattern),
    });
    machine
        .regex_cache
        .insert(pattern.to_vec(), compiled.clone());
    Ok(compiled)
}

fn groups(captures: &regex::bytes::Captures<'_>) -> Value {
    let items: Vec<Value> = (1..captures.len())
        .map(|index| match captures.get(index) {
            Some(group) => Value::string(group.as_bytes()),
            None => Value::Null,
        })
        .collect();
    Value::List(crate::value::List::from(items))
}

/// The groups (but the whole match) as `match` and `split` give them.
fn group_values(subject: &[u8], found: &[posix_regex::Group]) -> Value {
    let items: Vec<Value> = found
        .iter()
        .skip(1)
        .map(|group| {
            if group.matched {
                Value::string(&subject[group.first..group.second])
            } else {
                Value::Null
            }
        })
        .collect();
    Value::List(crate::value::List::from(items))
}

fn match_builtin(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let pattern = machine.force_string(&arguments[0], span, "`match` pattern")?;
    let subject = machine.force_string(&arguments[1], span, "`match`")?;
    let regex = compile(machine, &pattern, span)?;
    match posix_regex::whole_match(&regex.program, &subject) {
        Some(Some(found)) => Ok(group_values(&subject, &found)),
        Some(None) => Ok(Value::Null),
        None => {
            let fallback = regex
                .fallback
                .as_ref()
                .ok_or_else(|| too_expensive(&pattern, span))?;
            Ok(match fallback.whole.captures(&subject) {
                Some(captures) => groups(&captures),
                None => Value::Null,
            })
        }
    }
}

/// `builtins.split`: `std::regex_iterator` over the subject. After an empty match
/// the next one must be non-empty at the same place, or start further on.
fn split(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let pattern = machine.force_string(&arguments[0], span, "`split` pattern")?;
    let subject_value = machine.force(&arguments[1], span)?;
    let subject = machine.force_string(&subject_value, span, "`split`")?;
    let regex = compile(machine, &pattern, span)?;
    let find =
        |position: usize, flags: posix_regex::Flags| -> EvalResult<Option<(usize, usize, Value)>> {
            match posix_regex::search(&regex.program, &subject, position, flags) {
                Some(Some(found)) => Ok(Some((
                    found[0].first,
                    found[0].second,
                    group_values(&subject, &found),
                ))),
                Some(None) => Ok(None),
                None => {
                    let fallback = regex
                        .fallback
                        .as_ref()
                        .ok_or_else(|| too_expensive(&pattern, span))?;
                    Ok(fallback.find(&subject, position, flags.continuous))
                }
            }
        };
    let mut result = Vec::new();
    let mut previous_end = 0;
    let mut found = find(0, posix_regex::Flags::default())?;
    while let Some((start, end, groups)) = found {
        result.push(Value::string(&subject[previous_end..start]));
        result.push(groups);
        previous_end = end;
        found = None;
        let mut position = end;
        if start == end {
            if end == subject.len() {
                break;
            }
            // `std::regex_iterator` adds `match_prev_avail` only after its first
            // step, so a retry right after the first match may still see `^`
            found = find(
                position,
                posix_regex::Flags {
                    previous_available: result.len() > 2,
                    not_null: true,
                    continuous: true,
                },
            )?;
            position += 1;
        }
        if found.is_none() {
            found = find(
                position,
                posix_regex::Flags {
                    previous_available: true,
                    ..posix_regex::Flags::default()
                },
            )?;
        }
    }
    if result.is_empty() {
        return Ok(Value::List(crate::value::List::from(vec![subject_value])));
    }
    result.push(Value::string(&subject[previous_end..]));
    Ok(Value::List(crate::value::List::from(result)))
}

#[cfg(test)]
mod tests {
    use super::translate;

    #[test]
    fn posix_patterns_translate() {
        assert_eq!(translate(b"[[:alpha:]]+").unwrap(), "[[:alpha:]]+");
        assert_eq!(translate(b"[]a]").unwrap(), "[\\x{5d}\\x{61}]");
        assert_eq!(translate(b"[\\]").unwrap(), "[\\x{5c}]");
        assert_eq!(translate(b"a\\.b").unwrap(), "a\\x{2e}b");
        assert_eq!(translate(b"a*?").unwrap(), "(?:a*)?");
    }

    #[test]
    fn what_libstdcxx_refuses_is_refused() {
        for pattern in [
            &b"\\d"[..],
            b"(?:a)",
            b"a{,2}",
            b"^*",
            b"[[:word:]]",
            b"[a-c-e]",
            b"[[:alpha:]-z]",
            b"a)",
            b"(a",
            b"[a",
            b"a\\",
            b"\\}",
        ] {
            assert!(
                translate(pattern).is_err(),
                "{}",
                String::from_utf8_lossy(pattern)
            );
        }
    }
}
