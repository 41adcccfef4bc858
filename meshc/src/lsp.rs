//! `meshc lsp`: the language server, on the compiler's own engine. The main loop
//! answers requests from open buffers and the last index, and never evaluates;
//! compilations run on the analysis worker (`lsp/analysis.rs`) with the buffers laid
//! over the repository's files. Diagnostics are exactly `meshc check`'s, published
//! per file; syntax errors of the buffer being typed are published at once.

mod analysis;
mod builtin_docs;
mod documents;
mod features;
mod syntax;
mod transport;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crossbeam_channel::{select, unbounded};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument, DidOpenTextDocument,
    DidSaveTextDocument, LogMessage, Notification as _, Progress, PublishDiagnostics, ShowMessage,
};
use lsp_types::request::{
    Completion, Formatting, GotoDefinition, HoverRequest, Request as _, Shutdown,
    WorkDoneProgressCreate,
};
use lsp_types::{
    CompletionOptions, CompletionParams, CompletionResponse, GotoDefinitionParams,
    GotoDefinitionResponse, HoverParams, HoverProviderCapability, InitializeParams,
    LogMessageParams, MessageType, NumberOrString, OneOf, ProgressParams, ProgressParamsValue,
    PublishDiagnosticsParams, SaveOptions, ServerCapabilities, ServerInfo, ShowMessageParams,
    TextDocumentSyncCapability, TextDocumentSyncKind, TextDocumentSyncOptions,
    TextDocumentSyncSaveOptions, Url, WorkDoneProgress, WorkDoneProgressBegin,
    WorkDoneProgressCreateParams, WorkDoneProgressEnd,
};

use analysis::{Analyzer, Index, Outcome};
use compiler::Overlay;
use documents::{Document, Encoding};
use syntax::SyntaxWorker;

/// Runs the server on stdin and stdout until the client says `exit` (or goes away).
pub fn run() -> Result<(), Box<lang::Diagnostic>> {
    // the parser and the tree walks recurse as deeply as the buffer nests
    let server = std::thread::Builder::new()
        .name("mesh-lsp".into())
        .stack_size(lang::eval::EVAL_STACK_SIZE)
        .spawn(serve)
        .map_err(|error| {
            Box::new(lang::Diagnostic::no_thread(format!(
                "cannot start the server thread: {error}"
            )))
        })?;
    server
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// The editor's connection failing before it was set up (E058).
fn connection_failed(error: impl std::fmt::Display) -> Box<lang::Diagnostic> {
    Box::new(
        lang::Diagnostic::error(
            lang::codes::LANGUAGE_SERVER_CONNECTION,
            format!("the editor's connection failed before it was set up: {error}"),
        )
        .with_help(
            "`meshc lsp` is started by an editor, which must send `initialize` first; check the editor's language server settings (see the book's chapter on editors)",
        ),
    )
}

fn serve() -> Result<(), Box<lang::Diagnostic>> {
    let (connection, writer) = transport::stdio();
    let result = serve_on(&connection);
    drop(connection);
    writer.join();
    result
}

fn serve_on(connection: &Connection) -> Result<(), Box<lang::Diagnostic>> {
    let (id, params) = connection.initialize_start().map_err(connection_failed)?;
    let params: InitializeParams = serde_json::from_value(params).unwrap_or_default();
    let progress = params
        .capabilities
        .window
        .as_ref()
        .and_then(|window| window.work_done_progress)
        .unwrap_or(false);
    let encoding = Encoding::negotiate(
        params
            .capabilities
            .general
            .as_ref()
            .and_then(|general| general.position_encodings.as_deref()),
    );
    let capabilities = ServerCapabilities {
        position_encoding: Some(encoding.kind()),
        text_document_sync: Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions {
                    include_text: Some(false),
                })),
                ..TextDocumentSyncOptions::default()
            },
        )),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        document_formatting_provider: Some(OneOf::Left(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec![".".into(), "\"".into()]),
            ..CompletionOptions::default()
        }),
        ..ServerCapabilities::default()
    };
    let result = serde_json::json!({
        "capabilities": capabilities,
        "serverInfo": ServerInfo {
            name: "meshc".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        },
    });
    connection
        .initialize_finish(id, result)
        .map_err(connection_failed)?;

    let (results_sender, results) = unbounded();
    // each parses and evaluates on the evaluator's stack: a server without them
    // would answer and never report a diagnostic, so it says why and ends (E059)
    let (syntax, analyzer) = SyntaxWorker::start(encoding, results_sender.clone())
        .and_then(|syntax| Ok((syntax, Analyzer::start(encoding, results_sender)?)))
        .map_err(|error| {
            let diagnostic = lang::Diagnostic::no_thread(format!(
                "cannot start the language server's workers: {error}"
            ));
            let message = format!(
                "meshc lsp: [{}] {} ({})",
                lang::codes::NO_EVALUATION_THREAD,
                diagnostic.message,
                diagnostic.help.as_deref().unwrap_or_default()
            );
            let _ = connection.sender.send(
                Notification::new(
                    ShowMessage::METHOD.to_string(),
                    ShowMessageParams {
                        typ: MessageType::ERROR,
                        message,
                    },
                )
                .into(),
            );
            Box::new(diagnostic)
        })?;
    let mut server = Server {
        sender: connection.sender.clone(),
        encoding,
        documents: HashMap::new(),
        edits: HashMap::new(),
        workspaces: BTreeMap::new(),
        analyzer,
        syntax,
        generation: 0,
        globals: global_names(),
        progress,
    };
    // after `shutdown`, only `exit` is acted on; requests get an error, and anything
    // else that was on its way (a response to a progress request) is dropped
    let mut shutting_down = false;
    let outcome = loop {
        select! {
            recv(connection.receiver) -> message => match message {
                Ok(Message::Request(request)) => {
                    if request.method == Shutdown::METHOD {
                        shutting_down = true;
                        server.respond(request.id, serde_json::Value::Null);
                    } else if shutting_down {
                        server.send(Response::new_err(
                            request.id,
                            ErrorCode::InvalidRequest as i32,
                            "the server is shutting down".to_string(),
                        ));
                    } else {
                        server.request(request);
                    }
                }
                Ok(Message::Notification(notification)) => {
                    if notification.method == "exit" {
                        break Ok(());
                    }
                    if !shutting_down {
                        server.notification(notification);
                    }
                }
                Ok(Message::Response(_)) => {}
                Err(_) => break Ok(()),
            },
            recv(results) -> outcome => {
                if let Ok(outcome) = outcome {
                    server.analysed(outcome);
                }
            }
        }
    };
    server.analyzer.stop();
    outcome
}

/// The builtins every file sees without `builtins.` (`map`, `toString`, `true`).
fn global_names() -> BTreeSet<String> {
    let machine = lang::Machine::new(
        std::rc::Rc::new(lang::MemoryLoader::new()),
        Vec::new(),
        lang::Limits::default(),
    );
    builtin_docs::BUILTINS
        .iter()
        .map(|(name, _, _)| *name)
        .filter(|name| machine.global(name).is_some())
        .map(str::to_string)
        .collect()
}

/// What the server knows of one repository.
#[derive(Default)]
struct Workspace {
    /// Files the last publication gave diagnostics (cleared when they have none).
    published: BTreeSet<Url>,
    index: Arc<Index>,
    /// The newest analysis asked for; older results are not published.
    generation: u64,
    /// The analysis whose diagnostics were published last (a buffer's syntax errors
    /// of the same edit or an older one come too late to show).
    published_generation: u64,
    /// The progress token shown while analyses of this repository run.
    progress: Option<String>,
}

struct Server {
    sender: crossbeam_channel::Sender<Message>,
    encoding: Encoding,
    documents: HashMap<Url, Document>,
    /// The newest edit of each buffer (its syntax errors of older ones are stale).
    edits: HashMap<Url, u64>,
    workspaces: BTreeMap<PathBuf, Workspace>,
    analyzer: Analyzer,
    syntax: SyntaxWorker,
    generation: u64,
    globals: BTreeSet<String>,
    /// Whether the client shows `$/progress` (then each analysis shows as "checking").
    progress: bool,
}

/// The path the compiler knows a file by: absolute, symlinks resolved.
fn canonical(path: &Path) -> PathBuf {
    if let Ok(path) = path.canonicalize() {
        return path;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => parent
            .canonicalize()
            .map(|parent| parent.join(name))
            .unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

impl Server {
    fn send(&self, message: impl Into<Message>) {
        let _ = self.sender.send(message.into());
    }

    fn respond<T: serde::Serialize>(&self, id: RequestId, result: T) {
        self.send(Response::new_ok(id, result));
    }

    fn send_progress(&self, token: String, value: WorkDoneProgress) {
        self.send(Notification::new(
            Progress::METHOD.to_string(),
            ProgressParams {
                token: NumberOrString::String(token),
                value: ProgressParamsValue::WorkDone(value),
            },
        ));
    }

    /// A line in the editor's log of the server (`window/logMessage`).
    fn log(&self, message: String) {
        self.send(Notification::new(
            LogMessage::METHOD.to_string(),
            LogMessageParams {
                typ: MessageType::LOG,
                message,
            },
        ));
    }

    fn publish(&self, uri: Url, diagnostics: Vec<lsp_types::Diagnostic>) {
        let params = PublishDiagnosticsParams {
            uri,
            diagnostics,
            version: None,
        };
        self.send(Notification::new(
            PublishDiagnostics::METHOD.to_string(),
            params,
        ));
    }

    fn root_of(&self, path: &Path) -> Option<PathBuf> {
        compiler::find_root(path.parent()?)
    }

    /// The URI a file is known by: the client's, if it has the file open.
    fn uri_of(&self, path: &Path) -> Option<Url> {
        self.documents
            .iter()
            .find(|(_, document)| document.path == path)
            .map(|(uri, _)| uri.clone())
            .or_else(|| Url::from_file_path(path).ok())
    }

    fn request(&mut self, request: Request) {
        let id = request.id.clone();
        let result = match request.method.as_str() {
            HoverRequest::METHOD => self.hover(request),
            GotoDefinition::METHOD => self.definition(request),
            Completion::METHOD => self.completion(request),
            Formatting::METHOD => self.formatting(request),
            method => Err((
                ErrorCode::MethodNotFound,
                format!("`meshc lsp` does not handle `{method}`"),
            )),
        };
        match result {
            Ok(value) => self.respond(id, value),
            Err((code, message)) => self.send(Response::new_err(id, code as i32, message)),
        }
    }

    fn view<'a>(
        &'a self,
        uri: &'a Url,
        is_global: &'a dyn Fn(&str) -> bool,
    ) -> Option<features::View<'a>> {
        let document = self.documents.get(uri)?;
        // the innermost repository holding the file
        let root = self
            .workspaces
            .keys()
            .filter(|root| document.path.starts_with(root))
            .max_by_key(|root| root.as_os_str().len())
            .map(PathBuf::as_path);
        Some(features::View {
            document,
            uri,
            root,
            index: root.and_then(|root| self.workspaces.get(root).map(|w| &*w.index)),
            encoding: self.encoding,
            is_global,
        })
    }

    fn hover(&self, request: Request) -> Result<serde_json::Value, (ErrorCode, String)> {
        let params: HoverParams = parameters(request)?;
        let position = params.text_document_position_params;
        let is_global = |name: &str| self.globals.contains(name);
        let hover = self
            .view(&position.text_document.uri, &is_global)
            .and_then(|view| features::hover(&view, position.position));
        Ok(serde_json::to_value(hover).unwrap_or_default())
    }

    fn definition(&self, request: Request) -> Result<serde_json::Value, (ErrorCode, String)> {
        let params: GotoDefinitionParams = parameters(request)?;
        let position = params.text_document_position_params;
        let is_global = |name: &str| self.globals.contains(name);
        let location = self
            .view(&position.text_document.uri, &is_global)
            .and_then(|view| features::definition(&view, position.position));
        Ok(serde_json::to_value(location.map(GotoDefinitionResponse::Scalar)).unwrap_or_default())
    }

    /// `textDocument/formatting`: the whole document formatted as `meshc fmt` does,
    /// as one edit (none if it is formatted already or cannot be formatted: its
    /// syntax errors are published already). A document the formatter would take too
    /// long on (E054: a chain too long, or [`crate::format::EDITOR_TIME_LIMIT`] spent)
    /// gets an error the editor shows, so the request never keeps the editor waiting.
    fn formatting(&self, request: Request) -> Result<serde_json::Value, (ErrorCode, String)> {
        let params: lsp_types::DocumentFormattingParams = parameters(request)?;
        let Some(document) = self.documents.get(&params.text_document.uri) else {
            return Ok(serde_json::Value::Null);
        };
        let mut sources = lang::Sources::new();
        let name = document.path.display().to_string();
        let formatted = crate::format::format_text(
            &name,
            &document.text,
            &mut sources,
            crate::format::EDITOR_TIME_LIMIT,
        );
        let edits = match formatted {
            Ok(formatted) if formatted != document.text => {
                let whole = documents::LineIndex::new(document.text.as_bytes()).range(
                    0,
                    document.text.len(),
                    self.encoding,
                );
                vec![lsp_types::TextEdit::new(whole, formatted)]
            }
            Err(diagnostics) => {
                if let Some(slow) = diagnostics
                    .iter()
                    .find(|diagnostic| diagnostic.code == lang::codes::FORMATTING_TOO_SLOW)
                {
                    let help = slow.help.as_deref().unwrap_or_default();
                    return Err((
                        ErrorCode::RequestFailed,
                        format!("{}: {}; {help}", slow.code.as_str(), slow.message),
                    ));
                }
                Vec::new()
            }
            Ok(_) => Vec::new(),
        };
        Ok(serde_json::to_value(edits).unwrap_or_default())
    }

    fn completion(&self, request: Request) -> Result<serde_json::Value, (ErrorCode, String)> {
        let params: CompletionParams = parameters(request)?;
        let position = params.text_document_position;
        let is_global = |name: &str| self.globals.contains(name);
        let items = self
            .view(&position.text_document.uri, &is_global)
            .map(|view| features::completion(&view, position.position))
            .unwrap_or_default();
        Ok(serde_json::to_value(CompletionResponse::Array(items)).unwrap_or_default())
    }

    fn notification(&mut self, notification: Notification) {
        match notification.method.as_str() {
            DidOpenTextDocument::METHOD => {
                let Ok(params) = serde_json::from_value::<lsp_types::DidOpenTextDocumentParams>(
                    notification.params,
                ) else {
                    return;
                };
                let Ok(path) = params.text_document.uri.to_file_path() else {
                    return;
                };
                let uri = params.text_document.uri;
                self.documents.insert(
                    uri.clone(),
                    Document {
                        path: canonical(&path),
                        version: params.text_document.version,
                        text: params.text_document.text,
                    },
                );
                self.edited(&uri);
            }
            DidChangeTextDocument::METHOD => {
                let Ok(params) = serde_json::from_value::<lsp_types::DidChangeTextDocumentParams>(
                    notification.params,
                ) else {
                    return;
                };
                let uri = params.text_document.uri;
                let encoding = self.encoding;
                let Some(document) = self.documents.get_mut(&uri) else {
                    return;
                };
                document.version = params.text_document.version;
                for change in params.content_changes {
                    document.apply(change, encoding);
                }
                self.edited(&uri);
            }
            DidSaveTextDocument::METHOD => {
                if let Ok(params) = serde_json::from_value::<lsp_types::DidSaveTextDocumentParams>(
                    notification.params,
                ) && let Ok(path) = params.text_document.uri.to_file_path()
                    && let Some(root) = self.root_of(&canonical(&path))
                {
                    self.analyse(root);
                }
            }
            DidCloseTextDocument::METHOD => {
                let Ok(params) = serde_json::from_value::<lsp_types::DidCloseTextDocumentParams>(
                    notification.params,
                ) else {
                    return;
                };
                let uri = params.text_document.uri;
                self.edits.remove(&uri);
                if let Some(document) = self.documents.remove(&uri) {
                    match self.root_of(&document.path) {
                        // the file is read from disk again
                        Some(root) => {
                            self.analyse(root);
                        }
                        None => self.publish(uri, Vec::new()),
                    }
                }
            }
            DidChangeWatchedFiles::METHOD => {
                let roots: Vec<PathBuf> = self.workspaces.keys().cloned().collect();
                for root in roots {
                    self.analyse(root);
                }
            }
            _ => {}
        }
    }

    /// A buffer changed: its syntax errors as soon as the syntax worker has them
    /// (unless the repository's diagnostics of this edit came first), the
    /// repository's diagnostics when the analysis is done. Nothing is parsed here.
    fn edited(&mut self, uri: &Url) {
        let Some(document) = self.documents.get(uri) else {
            return;
        };
        let root = self.root_of(&document.path);
        let path = document.path.clone();
        let text: Arc<str> = Arc::from(document.text.as_str());
        let generation = match &root {
            Some(root) => self.analyse(root.clone()),
            None => {
                self.generation += 1;
                self.generation
            }
        };
        self.edits.insert(uri.clone(), generation);
        self.syntax.submit(syntax::Request {
            uri: uri.clone(),
            path,
            text,
            root,
            generation,
        });
    }

    /// A buffer's syntax errors (or, outside any repository, all its errors), if they
    /// are still the newest news about it.
    fn parsed(
        &mut self,
        uri: Url,
        in_repository: bool,
        generation: u64,
        diagnostics: Vec<lsp_types::Diagnostic>,
    ) {
        if self.edits.get(&uri) != Some(&generation) {
            return;
        }
        if !in_repository {
            self.publish(uri, diagnostics);
            return;
        }
        let Some(document) = self.documents.get(&uri) else {
            return;
        };
        let Some(root) = self.root_of(&document.path) else {
            return;
        };
        let Some(workspace) = self.workspaces.get_mut(&root) else {
            return;
        };
        if diagnostics.is_empty() || workspace.published_generation >= generation {
            return;
        }
        workspace.published.insert(uri.clone());
        self.publish(uri, diagnostics);
    }

    /// Queues a compilation of `root` with the buffers; its generation.
    fn analyse(&mut self, root: PathBuf) -> u64 {
        self.generation += 1;
        let overlay: BTreeMap<PathBuf, Arc<[u8]>> = self
            .documents
            .values()
            .filter(|document| document.path.starts_with(&root))
            .map(|document| (document.path.clone(), Arc::from(document.text.as_bytes())))
            .collect();
        let generation = self.generation;
        let show_progress = self.progress;
        let workspace = self.workspaces.entry(root.clone()).or_default();
        workspace.generation = generation;
        if show_progress && workspace.progress.is_none() {
            let token = format!("meshc-check-{generation}");
            workspace.progress = Some(token.clone());
            self.send(Request::new(
                RequestId::from(token.clone()),
                WorkDoneProgressCreate::METHOD.to_string(),
                WorkDoneProgressCreateParams {
                    token: NumberOrString::String(token.clone()),
                },
            ));
            self.send_progress(
                token,
                WorkDoneProgress::Begin(WorkDoneProgressBegin {
                    title: "meshc check".into(),
                    message: Some(root.display().to_string()),
                    ..WorkDoneProgressBegin::default()
                }),
            );
        }
        self.analyzer.submit(analysis::Request {
            root,
            overlay: Overlay::new(overlay),
            generation: self.generation,
        });
        generation
    }

    fn analysed(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Diagnostics {
                root,
                generation,
                files,
                traces,
                reuse,
            } => {
                let current = self
                    .workspaces
                    .get(&root)
                    .is_some_and(|workspace| workspace.generation == generation);
                if !current {
                    return;
                }
                for message in traces {
                    self.log(message);
                }
                let mut published = BTreeSet::new();
                for (path, diagnostics) in files {
                    if let Some(uri) = self.uri_of(&path) {
                        published.insert(uri.clone());
                        self.publish(uri, diagnostics);
                    }
                }
                let previous = self
                    .workspaces
                    .get_mut(&root)
                    .map(|workspace| std::mem::take(&mut workspace.published))
                    .unwrap_or_default();
                for uri in previous.difference(&published) {
                    self.publish(uri.clone(), Vec::new());
                }
                if let Some(workspace) = self.workspaces.get_mut(&root) {
                    workspace.published = published;
                    workspace.published_generation = generation;
                }
                if let Some(line) = reuse {
                    self.log(line);
                }
            }
            Outcome::Syntax {
                uri,
                in_repository,
                generation,
                diagnostics,
            } => self.parsed(uri, in_repository, generation, diagnostics),
            Outcome::Index {
                root,
                generation,
                index,
            } => {
                let workspace = self.workspaces.entry(root).or_default();
                workspace.index = index;
                // the analysis the user waits for is complete: diagnostics and index
                if workspace.generation == generation
                    && let Some(token) = workspace.progress.take()
                {
                    self.send_progress(
                        token,
                        WorkDoneProgress::End(WorkDoneProgressEnd { message: None }),
                    );
                }
            }
        }
    }
}

fn parameters<P: serde::de::DeserializeOwned>(request: Request) -> Result<P, (ErrorCode, String)> {
    serde_json::from_value(request.params).map_err(|error| {
        (
            ErrorCode::InvalidParams,
            format!("invalid parameters for `{}`: {error}", request.method),
        )
    })
}
