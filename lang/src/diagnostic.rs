//! The one plain diagnostic value every phase produces. It is data only: rendering
//! (miette, JSON, LSP) happens at the edge, in `meshc`.

use crate::codes::Code;
use crate::span::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Note,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

impl Label {
    pub fn new(span: Span, message: impl Into<String>) -> Label {
        Label {
            span,
            message: message.into(),
        }
    }
}

/// What is wrong (`message`), where (`primary`, one span), what else helps see it
/// (`secondary`), and what to do about it (`help`). `trace` holds the evaluation
/// frames that led here, innermost first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    pub primary: Option<Label>,
    pub secondary: Vec<Label>,
    pub help: Option<String>,
    pub trace: Vec<Label>,
}

/// How many of `diagnostics` are errors (not warnings).
pub fn error_count(diagnostics: &[Diagnostic]) -> usize {
    diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.severity == Severity::Error)
        .count()
}

impl Diagnostic {
    pub fn error(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            primary: None,
            secondary: Vec::new(),
            help: None,
            trace: Vec::new(),
        }
    }

    pub fn warning(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message)
        }
    }

    pub fn note(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Note,
            ..Diagnostic::error(code, message)
        }
    }

    /// E900 for what cannot happen: a bug in mesh, said with the one help line every
    /// such error has.
    pub fn bug(message: impl Into<String>) -> Diagnostic {
        Diagnostic::error(crate::codes::INTERNAL, message).with_help(
            "this is a bug in mesh; please report it with the program or repository that shows it",
        )
    }

    /// E900 for a thread that could not be started (the machine is out of threads or
    /// memory): nothing is wrong with the input.
    /// A thread to evaluate on could not be started (E059): the process's limits
    /// on address space or threads, or the machine's memory.
    pub fn no_thread(message: impl Into<String>) -> Diagnostic {
        Diagnostic::error(crate::codes::NO_EVALUATION_THREAD, message)
            .with_help("an evaluation thread reserves 2 GiB of address space for its stack (it uses only as much as the program nests): raise the limit on virtual memory (`ulimit -v`, systemd's `LimitAS=`) or on threads (`ulimit -u`, `TasksMax=`), or free memory")
    }

    pub fn with_primary(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.primary = Some(Label::new(span, label));
        self
    }

    pub fn with_secondary(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.secondary.push(Label::new(span, label));
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn span(&self) -> Option<Span> {
        self.primary.as_ref().map(|label| label.span)
    }
}

/// Edit distance counting a swap of two neighbouring characters as one edit
/// (optimal string alignment), for "did you mean" suggestions.
pub fn edit_distance(left: &str, right: &str) -> usize {
    let left: Vec<char> = left.chars().collect();
    let right: Vec<char> = right.chars().collect();
    let width = right.len() + 1;
    let mut table = vec![0usize; (left.len() + 1) * width];
    for (index, cell) in table.iter_mut().enumerate().take(width) {
        *cell = index;
    }
    for row in 0..=left.len() {
        table[row * width] = row;
    }
    for row in 1..=left.len() {
        for column in 1..=right.len() {
            let cost = usize::from(left[row - 1] != right[column - 1]);
            let mut best = (table[(row - 1) * width + column - 1] + cost)
                .min(table[(row - 1) * width + column] + 1)
                .min(table[row * width + column - 1] + 1);
            if row > 1
                && column > 1
                && left[row - 1] == right[column - 2]
                && left[row - 2] == right[column - 1]
            {
                best = best.min(table[(row - 2) * width + column - 2] + 1);
            }
            table[row * width + column] = best;
        }
    }
    table[left.len() * width + right.len()]
}

/// Names longer than this get no "did you mean" by edit distance (its table grows
/// with the product of the two lengths).
const MAX_SUGGESTION_LENGTH: usize = 200;

/// The closest candidates to `name`, best first, if any is close enough to be a
/// plausible typo.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let name_length = name.chars().count();
    let limit = (name_length / 3).max(1);
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter(|candidate| *candidate != name)
        .filter_map(|candidate| {
            let same_but_case = name.len() >= 3 && candidate.to_lowercase() == name.to_lowercase();
            // the distance is at least the difference in length, and its table is
            // the product of the lengths: long names are compared only by case
            let candidate_length = candidate.chars().count();
            let comparable = name_length.abs_diff(candidate_length) <= limit
                && name_length.max(candidate_length) <= MAX_SUGGESTION_LENGTH;
            let distance = if comparable {
                edit_distance(name, candidate)
            } else {
                usize::MAX
            };
            // a name that shares nothing with the candidate is no typo of it
            ((distance <= limit && distance < name_length) || same_but_case)
                .then_some((distance, candidate))
        })
        .collect();
    scored.sort();
    scored.dedup();
    scored.into_iter().take(3).map(|(_, c)| c).collect()
}

/// "did you mean `a`?" / "did you mean `a` or `b`?", or None.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let found = closest(name, candidates);
    match found.as_slice() {
        [] => None,
        [one] => Some(format!("did you mean `{one}`?")),
        [rest @ .., last] => Some(format!(
            "did you mean {} or `{last}`?",
            rest.iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Names for a message, each in backticks: "`a`, `b`, `c`".
pub fn quoted<T: std::fmt::Display>(names: impl IntoIterator<Item = T>) -> String {
    names
        .into_iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How many names [`quoted_few`] writes out.
pub const FEW: usize = 10;

/// [`quoted`], of the first [`FEW`] names only, the rest counted: a help line that
/// named each of a fleet's 10,000 nodes would help nobody.
pub fn quoted_few<T: std::fmt::Display>(names: impl IntoIterator<Item = T>) -> String {
    let mut names = names.into_iter();
    let listed = quoted(names.by_ref().take(FEW));
    match names.count() {
        0 => listed,
        rest => format!("{listed} and {rest} more"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_list_of_names_is_cut_and_counted() {
        let names: Vec<String> = (0..10_000).map(|index| format!("node{index:05}")).collect();
        let listed = quoted_few(&names);
        assert!(listed.starts_with("`node00000`, `node00001`"), "{listed}");
        assert!(listed.ends_with("`node00009` and 9990 more"), "{listed}");
        assert!(listed.len() < 200, "{listed}");
        // a short list is every name
        assert_eq!(quoted_few(&names[..FEW]), quoted(&names[..FEW]));
        assert_eq!(quoted_few(&names[..2]), "`node00000`, `node00001`");
    }

    #[test]
    fn suggestions_prefer_the_closest_names() {
        assert_eq!(edit_distance("postgress", "postgres"), 1);
        assert_eq!(edit_distance("valeu", "value"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(
            did_you_mean("postgress", ["postgres", "networking", "users"]),
            Some("did you mean `postgres`?".to_string())
        );
        assert_eq!(did_you_mean("zzz", ["postgres"]), None);
    }
}
