//! What an interactive host (`meshc repl`) needs beyond evaluating a file: source
//! compiled with extra names above the globals (as `nix repl` binds its variables),
//! and a fresh step budget and memory bound for each line. It reads no files itself
//! and keeps no state of the session: the host owns the names.

use std::collections::HashMap;
use std::path::Path;

use super::{Globals, Machine, fresh_slot};
use crate::compile::{self, GlobalScope};
use crate::diagnostic::Diagnostic;
use crate::parser;
use crate::value::{Bytes, Value};

/// The session's names first, then the globals every file sees.
struct Layered<'a> {
    names: &'a HashMap<Bytes, Value>,
    below: &'a Globals,
}

impl GlobalScope for Layered<'_> {
    fn global(&self, name: &[u8]) -> Option<Value> {
        self.names
            .get(name)
            .cloned()
            .or_else(|| self.below.global(name))
    }

    fn global_names(&self) -> Vec<String> {
        let mut names = self.below.global_names();
        names.extend(
            self.names
                .keys()
                .map(|name| String::from_utf8_lossy(name).into_owned()),
        );
        names
    }
}

impl Machine {
    /// Evaluates `text` to weak head normal form with `names` in scope above the
    /// globals (a name there hides a global of the same name, as in `nix repl`).
    pub fn eval_source_in_scope(
        &mut self,
        name: &str,
        text: std::sync::Arc<[u8]>,
        base_directory: &Path,
        names: &HashMap<Bytes, Value>,
    ) -> Result<Value, Vec<Diagnostic>> {
        let file = self.sources.add(name.to_string(), None, text.clone());
        let parsed = parser::parse(&text, file);
        if !parsed.errors.is_empty() {
            return Err(parsed.errors);
        }
        self.symbols.intern_file(&parsed.expr);
        let globals = self.globals.clone();
        let layered = Layered {
            names,
            below: &globals,
        };
        let compiled = compile::compile(&parsed.expr, base_directory, &layered, &self.symbols);
        if !compiled.errors.is_empty() {
            return Err(compiled.errors);
        }
        self.binding_names.extend(compiled.binding_names);
        self.reference_names.extend(compiled.reference_names);
        self.eval_root(&compiled.ir)
            .map(fresh_slot)
            .map_err(|error| vec![*error])
    }

    /// `text` compiled now and evaluated only when its value is needed (`meshc eval
    /// --arg NAME EXPR`, as Nix's `--arg`: an argument no function takes is never
    /// evaluated); its syntax and scope errors are said now.
    pub fn delay_source(
        &mut self,
        name: &str,
        text: std::sync::Arc<[u8]>,
        base_directory: &Path,
    ) -> Result<Value, Vec<Diagnostic>> {
        let (_, ir) = self.compile_source(name, None, text, base_directory)?;
        Ok(crate::value::Thunk::suspended(
            ir,
            crate::value::EnvFrame::empty(None, 0),
        ))
    }

    /// Starts the next evaluation of a session: the step budget and the memory bound
    /// count from zero again, and whatever an earlier evaluation that ended in an
    /// error left half done (nesting, forces, imports under way) is forgotten.
    pub fn start_next_evaluation(&mut self) {
        self.steps = 0;
        self.step_check = 0;
        self.memory = 0;
        self.depth = 0;
        self.force_stack.clear();
        self.importing.clear();
        self.loader.next_evaluation();
    }
}

impl Machine {
    /// The global names a program may write without `builtins.` (for completion).
    pub fn global_names(&self) -> Vec<String> {
        self.globals.global_names()
    }
}
