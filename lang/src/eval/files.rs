//! Imports and the sandbox: which paths evaluation may read (the allowed roots),
//! reading through the host's loader, `import` cached per path, and import cycles.
//! No path outside the allowed roots is ever handed to the loader.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::*;
use crate::codes;
use crate::diagnostic::{Diagnostic, Label};
use crate::loader::FileKind;
use crate::span::Span;
use crate::value::{EvalResult, Value};

impl Machine {
    pub fn check_allowed(&self, path: &[u8], span: Span, what: &str) -> EvalResult<PathBuf> {
        if !self.is_allowed(path) {
            let text = String::from_utf8_lossy(path);
            return Err(error(
                codes::OUTSIDE_REPOSITORY,
                format!("{what} of `{text}`, which is outside the repository"),
                span,
                "reaches outside the repository",
                "evaluation may only read files inside the repository (and the standard module library); copy the file into the repository",
            ));
        }
        Ok(compile::host_path(path))
    }

    pub(crate) fn is_allowed(&self, path: &[u8]) -> bool {
        self.allowed_roots.iter().any(|root| {
            path == root.as_slice()
                || (path.starts_with(root)
                    && (root.ends_with(b"/") || path.get(root.len()) == Some(&b'/')))
        })
    }

    /// Whether a path written as a string reaches a file the way the operating
    /// system resolves it (Nix 2.8 hands such strings to the system as they are):
    /// `.`, `..` and a trailing `/` need a directory before them, so `"file/"` and
    /// `"missing/.."` lead nowhere even though their canonical forms exist.
    /// Directories outside the repository are not probed.
    pub(crate) fn raw_path_resolves(&self, raw: &[u8]) -> bool {
        let is_directory = |path: &[u8]| {
            let path = if path.is_empty() { &b"/"[..] } else { path };
            if !self.is_allowed(path) {
                return true;
            }
            let path = compile::host_path(path);
            self.loader.kind(&path) == Some(FileKind::Directory)
        };
        let mut prefix: Vec<u8> = Vec::new();
        for component in raw.split(|byte| *byte == b'/') {
            match component {
                b"" => {}
                b"." => {
                    if !is_directory(&prefix) {
                        return false;
                    }
                }
                b".." => {
                    if !is_directory(&prefix) {
                        return false;
                    }
                    let cut = prefix.iter().rposition(|byte| *byte == b'/').unwrap_or(0);
                    prefix.truncate(cut);
                }
                name => {
                    prefix.push(b'/');
                    prefix.extend_from_slice(name);
                }
            }
        }
        !(raw.len() > 1 && raw.ends_with(b"/")) || is_directory(&prefix)
    }

    pub(crate) fn loader(&self) -> Rc<dyn Loader> {
        self.loader.clone()
    }

    /// The bytes of the file at `path`, counted against the memory bound as a
    /// string made (`readFile`).
    pub fn read_file(&mut self, path: &[u8], span: Span, what: &str) -> EvalResult<Vec<u8>> {
        let bytes = self.read_file_bounded(path, span, what)?;
        self.allocate(bytes.len(), span)?;
        Ok(bytes)
    }

    /// The bytes of the file at `path`, not counted (`hashFile`: they are let go
    /// once hashed, and a worker's machine would count them again at every node),
    /// but refused, before more is read, past what is left of the memory bound.
    pub fn read_file_bounded(
        &mut self,
        path: &[u8],
        span: Span,
        what: &str,
    ) -> EvalResult<Vec<u8>> {
        let file_path = self.check_allowed(path, span, what)?;
        self.loader
            .read(&file_path, self.read_room())
            .map_err(|io_error| self.unreadable(&file_path, &io_error, span))
    }

    /// How many bytes a file read may bring: what is left of the memory bound.
    fn read_room(&self) -> u64 {
        match self.limits.max_memory {
            Some(max_memory) => max_memory.saturating_sub(self.memory),
            None => u64::MAX,
        }
    }

    /// Why the file at `path` was not read: E035, or the memory bound (E046) for a
    /// file larger than what was left of it.
    fn unreadable(&self, path: &Path, io_error: &std::io::Error, span: Span) -> Box<Diagnostic> {
        if io_error.kind() != std::io::ErrorKind::FileTooLarge {
            return unreadable(path, io_error, span);
        }
        let bound = match self.limits.max_memory {
            Some(max_memory) => format!("the memory bound of {}", describe_bytes(max_memory)),
            None => "the memory bound".to_string(),
        };
        error(
            codes::MEMORY_EXCEEDED,
            format!(
                "`{}` is larger than what is left of {bound} ({} left)",
                path.display(),
                describe_bytes(self.read_room())
            ),
            span,
            "read here",
            "check the path names the file meant; if it is only big, raise the bound \
             with `--max-memory`",
        )
    }

    /// The text of the source file at `path` (to be parsed), shared: the parse
    /// cache's copy when it holds the same bytes, else the loader's.
    pub(super) fn read_source(
        &mut self,
        path: &[u8],
        span: Span,
        what: &str,
    ) -> EvalResult<std::sync::Arc<[u8]>> {
        let file_path = self.check_allowed(path, span, what)?;
        let text = self
            .loader
            .read_source(&file_path, self.read_room())
            .map_err(|io_error| self.unreadable(&file_path, &io_error, span))?;
        Ok(self
            .parses
            .as_ref()
            .and_then(|cache| cache.text(self.sources.next_id(), &text))
            .unwrap_or(text))
    }

    pub(crate) fn import_path(&mut self, path: &[u8], span: Span) -> EvalResult<Value> {
        self.import_path_all_errors(path, span)
            .map_err(|mut errors| {
                let count = errors.len();
                let mut first = Box::new(errors.remove(0));
                if count > 1 {
                    first.message = format!(
                        "{} (and {} more errors in this file)",
                        first.message,
                        count - 1
                    );
                }
                first
            })
    }

    pub(super) fn import_path_all_errors(
        &mut self,
        path: &[u8],
        span: Span,
    ) -> Result<Value, Vec<Diagnostic>> {
        let mut path = path.to_vec();
        let file_path = self
            .check_allowed(&path, span, "import")
            .map_err(|error| vec![*error])?;
        // a file read ahead was a regular file then: not asked again
        let read_ahead = self
            .prefetch
            .as_ref()
            .is_some_and(|prefetch| prefetch.has(&path));
        if !read_ahead && self.loader.kind(&file_path) == Some(FileKind::Directory) {
            // the root is the one directory whose path ends with `/`
            if !path.ends_with(b"/") {
                path.push(b'/');
            }
            path.extend_from_slice(b"default.nix");
        }
        if let Some(value) = self.file_cache.get(&path) {
            return Ok(value.clone());
        }
        if self.importing.contains(&path) {
            return Err(vec![self.import_cycle(&path, span)]);
        }
        let file_path = compile::host_path(&path);
        let base = file_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("/"));
        let read_ahead = self
            .prefetch
            .as_mut()
            .and_then(|prefetch| prefetch.take(&path));
        if read_ahead.is_some()
            && self
                .prefetch
                .as_ref()
                .is_some_and(|prefetch| prefetch.low())
        {
            // the window moved on: the next files named are read
            self.read_named();
        }
        let compiled = match read_ahead {
            // compiled under the id and with the bytes it was read ahead as
            Some(prefetch::ReadAhead { file, text, parsed }) => {
                let parsed = match parsed {
                    Some(Ok((expr, names))) => Ok((expr, Some(names), false)),
                    Some(Err(errors)) => Err(errors),
                    None => self.parse_cached(file, text.clone()),
                };
                parsed.and_then(|parsed| self.compile_parsed(file, parsed, text, &base))
            }
            None => {
                let text = self
                    .read_source(&path, span, "import")
                    .map_err(|error| vec![*error])?;
                let name = file_path.display().to_string();
                self.compile_source(&name, Some(file_path), text, &base)
            }
        };
        let (_, ir) = match compiled {
            Ok(compiled) => compiled,
            Err(mut errors) => {
                if span != Span::default() {
                    for error in &mut errors {
                        error.trace.push(Label::new(span, "imported here"));
                    }
                }
                return Err(errors);
            }
        };
        self.importing.push(path.clone());
        let value = self.eval_root(&ir);
        self.importing.pop();
        let value = value.map_err(|error| vec![*error])?;
        self.file_cache.insert(path, value.clone());
        Ok(value)
    }

    /// Remembers the files of `paths` (a compiled file's `.nix` path literals) and
    /// reads ahead the next files named (see [`Machine::read_named`]); only when the
    /// host asked for it ([`Machine::with_prefetch`]).
    pub(super) fn read_ahead(&mut self, paths: Vec<Vec<u8>>) {
        if let Some(prefetch) = self.prefetch.as_mut()
            && !paths.is_empty()
        {
            prefetch.name(paths);
            self.read_named();
        }
    }

    /// Reads files named and not read yet, in the order named, while the window
    /// of files read ahead has room, adds each to the sources and gives it to the
    /// parsing thread. A file that no evaluation read yet and that `import` may
    /// reach is read: inside the allowed roots, a regular file as it is opened
    /// (opened without waiting: a FIFO no import asked for could block), that
    /// keeps what is read ahead and not imported yet within
    /// [`prefetch::AHEAD_BYTES`]; any other is left alone (to its import, if one
    /// comes, to read or report).
    pub(super) fn read_named(&mut self) {
        let Some(mut prefetch) = self.prefetch.take() else {
            return;
        };
        while let Some(path) = prefetch.next_named() {
            if self.file_cache.contains_key(&path) || !self.is_allowed(&path) {
                continue;
            }
            let file_path = compile::host_path(&path);
            if self.sources.find_path(&file_path).is_some() {
                continue;
            }
            // the file as it is when opened, and only as much as may be kept
            let Some(text) = self.loader.read_ahead(&file_path, prefetch.room()) else {
                continue;
            };
            let name = file_path.display().to_string();
            let file = self.sources.add(name, Some(file_path), text.clone());
            prefetch.give(path, file, text);
        }
        self.prefetch = Some(prefetch);
    }

    pub(super) fn import_cycle(&self, path: &[u8], span: Span) -> Diagnostic {
        let start = self
            .importing
            .iter()
            .position(|file| file == path)
            .unwrap_or(0);
        let names: Vec<String> = self.importing[start..]
            .iter()
            .map(|file| {
                let text = String::from_utf8_lossy(file).into_owned();
                let name = text.rsplit('/').next().unwrap_or(&text).to_string();
                format!("`{name}`")
            })
            .collect();
        let message = match names.as_slice() {
            [one] => format!("infinite recursion: {one} imports itself"),
            many => format!(
                "infinite recursion: imports form a cycle: {} -> {}",
                many.join(" -> "),
                many[0]
            ),
        };
        Diagnostic::error(codes::INFINITE_RECURSION, message)
            .with_primary(span, "this import is already being evaluated")
            .with_help("a file's value cannot depend on importing itself; move the shared part into a third file")
    }
}

fn unreadable(path: &Path, io_error: &std::io::Error, span: Span) -> Box<Diagnostic> {
    error(
        codes::FILE_UNREADABLE,
        format!("cannot read `{}`: {io_error}", path.display()),
        span,
        "read here",
        "check that the file exists and is readable",
    )
}
