//! Syntax trees kept between compilations (an editor compiles the repository again on
//! every edit; most files did not change). Invariant: a tree is reused only for the
//! same bytes under the same `FileId`, so it is exactly what parsing would give (the
//! parser reads nothing else), spans included. Shared by evaluation workers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::name::Name;
use crate::span::FileId;
use crate::syntax::Expr;

struct Entry {
    text: Arc<[u8]>,
    expr: Arc<Expr>,
    /// The tree's names in the order interning it meets them.
    names: Arc<[Name]>,
    /// A skimmed tree (see `skim`): compiled only with its text.
    skimmed: bool,
    /// The generation that last used it.
    used: u64,
}

/// Parsed files by file id and text. Only trees without syntax errors are kept.
#[derive(Default)]
pub struct ParseCache {
    entries: Mutex<HashMap<FileId, Vec<Entry>>>,
    /// Whether a file of plain data is skimmed instead of parsed (a build's cache:
    /// nothing but its evaluators reads its trees).
    skims: bool,
    generation: AtomicU64,
    hits: AtomicU64,
}

impl std::fmt::Debug for ParseCache {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ParseCache")
            .field("hits", &self.hits())
            .finish_non_exhaustive()
    }
}

impl ParseCache {
    pub fn new() -> ParseCache {
        ParseCache::default()
    }

    /// A cache whose files of plain data are skimmed ([`crate::skim`]), not
    /// parsed: for evaluators only, never for what reads a tree for its content
    /// (an editor's navigation), as a skimmed tree has hollow sets.
    pub fn skimming() -> ParseCache {
        ParseCache {
            skims: true,
            ..ParseCache::default()
        }
    }

    /// Whether it skims files of plain data.
    pub fn skims(&self) -> bool {
        self.skims
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<FileId, Vec<Entry>>> {
        // a worker that panicked left nothing half-done here: entries are whole
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The tree of `text` as file `file`, if it was parsed before, with its names
    /// in the order interning the tree meets them ([`crate::symbols::first_mentions`]),
    /// and whether it was skimmed.
    pub fn get(&self, file: FileId, text: &[u8]) -> Option<(Arc<Expr>, Arc<[Name]>, bool)> {
        let generation = self.generation.load(Ordering::Relaxed);
        let mut entries = self.entries();
        let entry = entries
            .get_mut(&file)?
            .iter_mut()
            .find(|entry| same_text(&entry.text, text))?;
        entry.used = generation;
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some((entry.expr.clone(), entry.names.clone(), entry.skimmed))
    }

    /// The text kept as file `file` with the bytes `text`, shared instead of
    /// copied: a file read again by another evaluator (each build worker reads the
    /// 2 MB inventory) holds the bytes the first one kept.
    pub fn text(&self, file: FileId, text: &[u8]) -> Option<Arc<[u8]>> {
        self.entries()
            .get(&file)?
            .iter()
            .find(|entry| same_text(&entry.text, text))
            .map(|entry| entry.text.clone())
    }

    /// Keeps the tree `expr` of `text` as file `file`, with its `names` in the order
    /// interning it meets them; `skimmed` if it is a skimmed tree.
    pub fn insert(
        &self,
        file: FileId,
        text: Arc<[u8]>,
        expr: Arc<Expr>,
        names: Arc<[Name]>,
        skimmed: bool,
    ) {
        let used = self.generation.load(Ordering::Relaxed);
        let mut entries = self.entries();
        let versions = entries.entry(file).or_default();
        if !versions.iter().any(|entry| same_text(&entry.text, &text)) {
            versions.push(Entry {
                text,
                expr,
                names,
                skimmed,
                used,
            });
        }
    }

    /// Forgets every tree not used since the last sweep (call it after each
    /// compilation, on a thread with the evaluator's stack: trees can be deep).
    pub fn sweep(&self) {
        let generation = self.generation.fetch_add(1, Ordering::Relaxed);
        let mut entries = self.entries();
        for versions in entries.values_mut() {
            versions.retain(|entry| entry.used >= generation);
        }
        entries.retain(|_, versions| !versions.is_empty());
    }

    /// How many lookups found a tree (for tests and measurements).
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// How many trees are kept.
    pub fn len(&self) -> usize {
        self.entries().values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Whether `text` is the kept text `kept`: the same bytes in the same place (a
/// shared text) without reading them, else compared.
fn same_text(kept: &[u8], text: &[u8]) -> bool {
    std::ptr::eq(kept, text) || kept == text
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::rc::Rc;
    use std::sync::Arc;

    use crate::{Limits, Machine, MemoryLoader, ParseCache};

    fn machine(cache: &Arc<ParseCache>) -> Machine {
        Machine::new(Rc::new(MemoryLoader::new()), Vec::new(), Limits::default())
            .with_parse_cache(cache.clone())
    }

    /// What `text` evaluates to, printed, in a fresh machine sharing `cache`.
    fn evaluate(cache: &Arc<ParseCache>, text: &str) -> Result<String, Vec<String>> {
        let mut machine = machine(cache);
        let value = machine
            .eval_source("t.nix", None, Arc::from(text.as_bytes()), Path::new("/"))
            .map_err(|errors| {
                errors
                    .iter()
                    .map(|e| e.code.to_string())
                    .collect::<Vec<_>>()
            })?;
        let printed = machine
            .print_strict(&value)
            .map_err(|error| vec![error.code.to_string()])?;
        Ok(String::from_utf8(printed).expect("utf8"))
    }

    #[test]
    fn the_same_text_is_parsed_once_and_evaluates_the_same() {
        let cache = Arc::new(ParseCache::new());
        let text = "let x = { a = 1; }; in x.a + 2";
        assert_eq!(evaluate(&cache, text), Ok("3".to_string()));
        assert_eq!(cache.hits(), 0);
        assert_eq!(evaluate(&cache, text), Ok("3".to_string()));
        assert_eq!(cache.hits(), 1, "the second machine reused the tree");
    }

    #[test]
    fn a_text_read_again_is_the_one_kept() {
        let cache = Arc::new(ParseCache::new());
        assert_eq!(evaluate(&cache, "[ 1 2 ]"), Ok("[ 1 2 ]".to_string()));
        let file = crate::span::FileId(0);
        let kept = cache.text(file, b"[ 1 2 ]").expect("kept");
        let again = cache.text(file, b"[ 1 2 ]").expect("kept");
        assert!(Arc::ptr_eq(&kept, &again));
        assert!(cache.text(file, b"[ 1 3 ]").is_none());
        assert!(cache.text(file, b"[ 1 2 ] ").is_none());
        assert!(cache.text(crate::span::FileId(1), b"[ 1 2 ]").is_none());
    }

    #[test]
    fn changed_text_is_parsed_again() {
        let cache = Arc::new(ParseCache::new());
        assert_eq!(evaluate(&cache, "1 + 1"), Ok("2".to_string()));
        assert_eq!(evaluate(&cache, "1 + 2"), Ok("3".to_string()));
        assert_eq!(cache.hits(), 0);
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn a_syntax_error_is_not_kept_and_still_reported() {
        let cache = Arc::new(ParseCache::new());
        for _ in 0..2 {
            let errors = evaluate(&cache, "{ a = 1 }").expect_err("syntax error");
            assert!(!errors.is_empty());
        }
        assert!(cache.is_empty());
    }

    #[test]
    fn a_sweep_forgets_what_was_not_used_since_the_last_one() {
        let cache = Arc::new(ParseCache::new());
        evaluate(&cache, "1").expect("evaluates");
        evaluate(&cache, "2").expect("evaluates");
        cache.sweep();
        assert_eq!(
            cache.len(),
            2,
            "both were used in the generation just ended"
        );
        evaluate(&cache, "1").expect("evaluates");
        cache.sweep();
        assert_eq!(cache.len(), 1, "`2` was not used since the last sweep");
        evaluate(&cache, "1").expect("evaluates");
        assert_eq!(cache.hits(), 2);
    }
}
