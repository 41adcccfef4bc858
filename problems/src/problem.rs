//! A coded problem and the text it is printed as: `error[E601]: ` and a message that
//! says what is wrong, a `  --> ` line where the binary can point at what it is about,
//! then `  = help: ` and what to do, every part escaped. Plain data; a binary's JSON
//! is its own. Must never decide what a message says.

use crate::codes::Code;
use crate::escape::Escape;

/// A problem a binary reports, as [`render`] prints it.
pub trait Coded {
    /// Its code's number: `E601`.
    fn code(&self) -> &'static str;
    /// One line: what went wrong, with what it is about named.
    fn message(&self) -> &str;
    /// One line: how to fix it.
    fn help(&self) -> &str;
    /// What the problem is about, where the binary can point at one thing (a shape
    /// and where it was declared): the text of its `  --> ` line.
    fn location(&self) -> Option<String> {
        None
    }
}

/// A problem with a code of a registry `codes!` declared, its message and its help
/// line: all a problem of `mesh-provision` has, and the start of `mesh-apply`'s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem<C> {
    pub code: C,
    /// One line: what went wrong, with the object (file, login, server) named.
    pub message: String,
    /// One line: how to fix it.
    pub help: String,
}

impl<C> Problem<C> {
    pub fn new(code: C, message: impl Into<String>, help: impl Into<String>) -> Problem<C> {
        Problem {
            code,
            message: message.into(),
            help: help.into(),
        }
    }

    /// The same problem with `text` appended to its message (`; nothing changed`).
    pub fn then(mut self, text: &str) -> Problem<C> {
        self.message.push_str(text);
        self
    }
}

impl<C: Code> Coded for Problem<C> {
    fn code(&self) -> &'static str {
        self.code.as_str()
    }

    fn message(&self) -> &str {
        &self.message
    }

    fn help(&self) -> &str {
        &self.help
    }
}

/// How bad a problem is: the word its first line starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// It kept something from being done.
    Error,
    /// The operator should know; it changes no outcome.
    Warning,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// `error[E507]: message`, then `  --> ` and the problem's location when it has one,
/// then `  = help: ` and the help line; every line ends with a newline and every part
/// is written with `escape`.
pub fn render(problem: &impl Coded, severity: Severity, escape: Escape) -> String {
    let mut out = format!(
        "{}[{}]: {}\n",
        severity.name(),
        problem.code(),
        escape.text(problem.message())
    );
    if let Some(location) = problem.location() {
        out.push_str(&format!("  --> {}\n", escape.text(&location)));
    }
    out.push_str(&format!("  = help: {}\n", escape.text(problem.help())));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_codes::Code;

    struct Located(Problem<Code>);

    impl Coded for Located {
        fn code(&self) -> &'static str {
            self.0.code()
        }

        fn message(&self) -> &str {
            &self.0.message
        }

        fn help(&self) -> &str {
            &self.0.help
        }

        fn location(&self) -> Option<String> {
            Some("modules/web.nix:3:5: file `/etc/x\u{1b}`".to_string())
        }
    }

    #[test]
    fn a_problem_is_its_code_and_message_its_location_and_its_help_each_escaped() {
        let problem = Problem::new(
            Code::Unreadable,
            "input `/m\u{1b}[2J\u{202e}`: cannot read it",
            "check \u{9b}31m",
        )
        .then("; nothing changed");
        assert_eq!(
            render(&problem, Severity::Error, Escape::Controls),
            "error[E700]: input `/m\\u{1b}[2J\\u{202e}`: cannot read it; nothing changed\n  \
             = help: check \\u{9b}31m\n"
        );
        let located = Located(Problem::new(Code::Unreadable, "x\u{200b}", "y"));
        assert_eq!(
            render(&located, Severity::Warning, Escape::ControlsAndInvisible),
            "warning[E700]: x\\u{200b}\n  --> modules/web.nix:3:5: file `/etc/x\\u{1b}`\n  \
             = help: y\n"
        );
    }
}
