//! A problem the applier reports: code, message, the shape and where it was declared,
//! and a help line. Plain data, a `problems::Coded` as the provisioner's problems are,
//! so both binaries print problems alike (`problems::render`, from `report`).

use plan::{Kind, Shape, Source};

use crate::codes::Code;

/// The shape a problem or a result is about, traced back to its declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub kind: Kind,
    pub identity: String,
    pub module: Option<String>,
    pub source: Option<Source>,
}

impl Origin {
    pub fn of(shape: &Shape) -> Origin {
        Origin {
            kind: shape.kind(),
            identity: shape.identity().to_string(),
            module: Some(shape.module().to_string()),
            source: Some(shape.source().clone()),
        }
    }

    /// `file `/etc/motd``.
    pub fn name(&self) -> String {
        format!("{} `{}`", self.kind.name(), self.identity)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub code: Code,
    pub message: String,
    /// Boxed to keep `Result<_, Problem>` small.
    pub origin: Option<Box<Origin>>,
    /// The step of the run that failed when it belongs to no shape (`flush the written
    /// files`, `reload the accounts`).
    pub step: Option<String>,
    pub help: String,
}

/// What `problems::render` prints: the location is where the shape was declared and
/// its name, or the step that failed when the problem belongs to no shape.
impl problems::Coded for Problem {
    fn code(&self) -> &'static str {
        self.code.as_str()
    }

    fn message(&self) -> &str {
        &self.message
    }

    fn help(&self) -> &str {
        &self.help
    }

    fn location(&self) -> Option<String> {
        if let Some(origin) = &self.origin {
            let declared = match (&origin.source, &origin.module) {
                (Some(source), Some(module)) => format!("{source} (module `{module}`)"),
                (None, Some(module)) => format!("module `{module}`"),
                _ => "the applied record".to_string(),
            };
            return Some(format!("{declared}: {}", origin.name()));
        }
        self.step
            .as_ref()
            .map(|step| format!("step `{step}` (no shape)"))
    }
}

impl Problem {
    pub fn new(code: Code, message: impl Into<String>, help: impl Into<String>) -> Problem {
        Problem {
            code,
            message: message.into(),
            origin: None,
            step: None,
            help: help.into(),
        }
    }

    pub fn about(mut self, origin: Origin) -> Problem {
        self.origin = Some(Box::new(origin));
        self
    }

    /// Marks the problem as the failure of a step that belongs to no shape.
    pub fn during(mut self, step: &str) -> Problem {
        self.step = Some(step.to_string());
        self
    }

    pub fn about_shape(self, shape: &Shape) -> Problem {
        self.about(Origin::of(shape))
    }

    /// A failed filesystem operation on `path`. A symlink the confined layer would not
    /// follow is E510, whenever it is met (a link declared by the plan, one swapped in
    /// while applying, or under `--root` one in a directory others may write).
    pub fn filesystem(doing: &str, path: &std::path::Path, error: &std::io::Error) -> Problem {
        if crate::confined::is_foreign_scratch(error) {
            return Problem::new(
                Code::InTheWay,
                format!(
                    "cannot {doing} `{}`: {error} (someone other than root may write in its directory, so it may be their data)",
                    path.display()
                ),
                "look at it: remove it by hand if it is the leftover of an interrupted mesh-apply (where others may write, mesh never removes a directory at a scratch name, whoever owns it), else move it away; mesh never removes what it cannot tell is its own",
            );
        }
        if let Some(link) = crate::confined::untrusted_symlink(error) {
            return Problem::new(
                Code::UnsafeHostPath,
                format!(
                    "cannot {doing} `{}`: on the way, {link}, so mesh does not follow it (under `--root`, only a symlink that nobody but root can have put there is followed)",
                    path.display()
                ),
                "replace the symlink with the directory it stands for, or move it to a directory owned by root and writable by root only; whoever may write where it is could have placed it to send mesh's changes elsewhere in the root",
            );
        }
        if let Some(ownership) = crate::confined::unsafe_ownership(error) {
            return Problem::new(
                Code::UnsafeOwnership,
                format!("cannot {doing} `{}`: {ownership}", path.display()),
                "in a directory a user owns, mesh acts only on what that user owns: give the path to the directory's owner in the plan, or move it out of that directory; if someone else's file or directory was moved there, look at it and move it back by hand",
            );
        }
        if crate::confined::is_symlink_refusal(error) {
            return Problem::new(
                Code::UnsafeHostPath,
                format!(
                    "cannot {doing} `{}`: it is or goes through a symlink on the host, which mesh does not follow here",
                    path.display()
                ),
                "write the path without the symlink; mesh does not write through links on the live host, or where a link replaced a directory while it applied",
            );
        }
        Problem::new(
            Code::FilesystemFailed,
            format!("cannot {doing} `{}`: {error}", path.display()),
            "check the disk, the permissions and what else writes there, then apply again",
        )
    }
}
