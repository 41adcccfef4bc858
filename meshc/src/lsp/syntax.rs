//! The syntax worker of `meshc lsp`: parses each edited buffer on its own thread and
//! reports its syntax errors (and, for a file outside any repository, its scope
//! errors), so that the main loop never parses and always answers, `shutdown`
//! included, however large the buffer. Only the newest text of each buffer is
//! parsed. It must not talk to the client itself, nor evaluate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender, unbounded};
use lsp_types::Url;

use crate::lsp::analysis::{self, Outcome};
use crate::lsp::documents::Encoding;

/// One buffer to parse: its text as of edit `generation`.
pub struct Request {
    pub uri: Url,
    pub path: PathBuf,
    pub text: Arc<str>,
    /// The repository the buffer belongs to; None for a file outside any.
    pub root: Option<PathBuf>,
    pub generation: u64,
}

/// The handle the main loop keeps; dropping it ends the worker.
pub struct SyntaxWorker {
    requests: Sender<Request>,
}

impl SyntaxWorker {
    /// Starts the worker's thread (an error when it cannot be started).
    pub fn start(encoding: Encoding, results: Sender<Outcome>) -> std::io::Result<SyntaxWorker> {
        let (requests, incoming) = unbounded();
        // the parser recurses as deeply as the buffer nests
        std::thread::Builder::new()
            .name("mesh-lsp-syntax".into())
            .stack_size(lang::eval::EVAL_STACK_SIZE)
            .spawn(move || work(&incoming, encoding, &results))?;
        Ok(SyntaxWorker { requests })
    }

    pub fn submit(&self, request: Request) {
        let _ = self.requests.send(request);
    }
}

fn work(incoming: &Receiver<Request>, encoding: Encoding, results: &Sender<Outcome>) {
    while let Ok(first) = incoming.recv() {
        // what queued up meanwhile: only the newest text of each buffer counts
        let mut newest: BTreeMap<Url, Request> = BTreeMap::new();
        for request in std::iter::once(first).chain(incoming.try_iter()) {
            newest.insert(request.uri.clone(), request);
        }
        for request in newest.into_values() {
            let diagnostics = match &request.root {
                Some(_) => {
                    let parsed = lang::parser::parse(request.text.as_bytes(), lang::FileId(0));
                    analysis::syntax_diagnostics(request.text.as_bytes(), &parsed.errors, encoding)
                }
                None => standalone(&request.path, &request.text, encoding),
            };
            let outcome = Outcome::Syntax {
                uri: request.uri,
                in_repository: request.root.is_some(),
                generation: request.generation,
                diagnostics,
            };
            if results.send(outcome).is_err() {
                return;
            }
        }
    }
}

/// The syntax and scope errors of a file outside any repository.
fn standalone(path: &Path, text: &str, encoding: Encoding) -> Vec<lsp_types::Diagnostic> {
    let directory = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    let mut machine = lang::Machine::new(
        std::rc::Rc::new(lang::MemoryLoader::new()),
        vec![directory.clone()],
        lang::Limits::default(),
    );
    match machine.compile_source(
        &path.display().to_string(),
        Some(path.to_path_buf()),
        Arc::from(text.as_bytes()),
        &directory,
    ) {
        Ok(_) => Vec::new(),
        Err(errors) => analysis::syntax_diagnostics(text.as_bytes(), &errors, encoding),
    }
}
