//! What `builtins.trace` and `builtins.warn` said during a compilation: taken from
//! each worker's machine with the place in the pipeline it came from, then merged
//! into one list that does not depend on the number of workers. Must not print:
//! the binary decides where the messages go.
//!
//! Every worker evaluates the inventory and every module file itself, and a thunk
//! a module shares between nodes is forced by the first node of each worker that
//! needs it. So the merged list keeps each distinct message of each call site once,
//! at its first place in this order: the repository (inventory, module files),
//! then each node's first half (resolve to link declarations) in name order, then
//! each node's shapes in name order; within one place, in evaluation order.

use std::collections::{HashMap, HashSet};

use lang::{FileId, Machine, Traced};

/// Where in the pipeline a message was said.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Place {
    /// The inventory and the module files, which every worker evaluates.
    Repository,
    /// One node's resolve, settings, contributions and link declarations.
    Declarations(String),
    /// One node's `shapes`.
    Shapes(String),
}

/// One worker's messages, each with its place.
pub struct Gathered {
    entries: Vec<(Place, Traced)>,
    place: Place,
}

impl Default for Gathered {
    fn default() -> Gathered {
        Gathered {
            entries: Vec::new(),
            place: Place::Repository,
        }
    }
}

impl Gathered {
    /// The worker moves on to `place`: what the machine said until now was said
    /// at the place before.
    pub fn enter(&mut self, machine: &mut Machine, place: Place) {
        self.finish(machine);
        self.place = place;
    }

    /// Takes what the machine said since the last place was entered.
    pub fn finish(&mut self, machine: &mut Machine) {
        let place = &self.place;
        self.entries.extend(
            std::mem::take(&mut machine.traces)
                .into_iter()
                .map(|traced| (place.clone(), traced)),
        );
    }

    /// The messages with their spans moved to the merged sources.
    pub fn remapped(self, mapping: &HashMap<FileId, FileId>) -> Vec<(Place, Traced)> {
        self.entries
            .into_iter()
            .map(|(place, mut traced)| {
                if let Some(file) = mapping.get(&traced.span.file) {
                    traced.span.file = *file;
                }
                (place, traced)
            })
            .collect()
    }
}

/// All workers' messages in the order the module comment gives, each distinct
/// message of a call site once.
pub fn merge(mut entries: Vec<(Place, Traced)>) -> Vec<Traced> {
    // stable: within a place, evaluation order stays (a place is one worker's)
    entries.sort_by(|left, right| left.0.cmp(&right.0));
    let mut seen = HashSet::new();
    entries
        .into_iter()
        .map(|(_, traced)| traced)
        .filter(|traced| seen.insert(traced.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lang::{Span, TraceKind};

    fn said(message: &str, start: usize) -> Traced {
        Traced {
            kind: TraceKind::Trace,
            message: message.to_string(),
            span: Span::new(FileId::default(), start, start + 1),
        }
    }

    #[test]
    fn a_message_said_by_every_worker_is_kept_once_at_its_first_place() {
        // worker 0 compiled `a`, worker 1 compiled `b`: both evaluated the module
        // file, and each forced the shared thunk (at 7) in its own first node
        let entries = vec![
            (Place::Repository, said("loaded", 1)),
            (Place::Declarations("a".into()), said("shared", 7)),
            (Place::Shapes("a".into()), said("a", 9)),
            (Place::Repository, said("loaded", 1)),
            (Place::Declarations("b".into()), said("shared", 7)),
            (Place::Shapes("b".into()), said("b", 9)),
        ];
        let one_worker = vec![
            (Place::Repository, said("loaded", 1)),
            (Place::Declarations("a".into()), said("shared", 7)),
            (Place::Shapes("a".into()), said("a", 9)),
            (Place::Shapes("b".into()), said("b", 9)),
        ];
        let merged = merge(entries);
        assert_eq!(merged, merge(one_worker));
        let messages: Vec<&str> = merged.iter().map(|t| t.message.as_str()).collect();
        assert_eq!(messages, ["loaded", "shared", "a", "b"]);
    }
}
