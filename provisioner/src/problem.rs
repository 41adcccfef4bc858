//! A problem the provisioner reports: its code, a message that names what it is about
//! (the manifest, a credential file, a login, the server) and a help line that says
//! what to do. Plain data, as the applier's `Problem`; rendering lives in `report`.
//! Must never carry a credential: messages name files and logins, never their content.

use crate::codes::Code;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub code: Code,
    /// One line: what went wrong, with the object (file, login, server) named.
    pub message: String,
    /// One line: how to fix it.
    pub help: String,
}

impl Problem {
    pub fn new(code: Code, message: impl Into<String>, help: impl Into<String>) -> Problem {
        Problem {
            code,
            message: message.into(),
            help: help.into(),
        }
    }

    /// The same problem with `text` appended to its message (`; nothing changed`).
    pub fn then(mut self, text: &str) -> Problem {
        self.message.push_str(text);
        self
    }
}
