//! The names of bindings and references by the span of their code, kept only for
//! diagnostics (an infinite recursion names its cycle, a budget names what ran
//! away). Invariant: appending hashes nothing; the first lookup after an append
//! indexes every entry, and where a span comes twice the later entry wins.

use std::cell::OnceCell;
use std::collections::HashMap;

use crate::name::Name;
use crate::span::Span;

#[derive(Default)]
pub(crate) struct SpanNames {
    entries: Vec<(Span, Name)>,
    index: OnceCell<HashMap<Span, usize>>,
}

impl SpanNames {
    /// Adds a compiled file's names (a few per binding of every file: no hashing).
    pub(crate) fn extend(&mut self, names: Vec<(Span, Name)>) {
        if self.entries.is_empty() {
            self.entries = names;
        } else {
            self.entries.extend(names);
        }
        self.index = OnceCell::new();
    }

    pub(crate) fn get(&self, span: &Span) -> Option<&Name> {
        let index = self.index.get_or_init(|| {
            let mut index = HashMap::with_capacity(self.entries.len());
            for (position, (span, _)) in self.entries.iter().enumerate() {
                index.insert(*span, position);
            }
            index
        });
        index.get(span).map(|&position| &self.entries[position].1)
    }
}

#[cfg(test)]
mod tests {
    use super::SpanNames;
    use crate::name::Name;
    use crate::span::{FileId, Span};

    #[test]
    fn the_later_name_of_a_span_wins_and_appends_are_seen() {
        let span = |start| Span::new(FileId(0), start, start + 1);
        let mut names = SpanNames::default();
        names.extend(vec![(span(1), Name::new(b"a")), (span(2), Name::new(b"b"))]);
        assert_eq!(names.get(&span(1)).map(|n| &n[..]), Some(&b"a"[..]));
        assert_eq!(names.get(&span(3)), None);
        // indexed once above; a later file's names (and a repeated span) still count
        names.extend(vec![(span(3), Name::new(b"c")), (span(1), Name::new(b"d"))]);
        assert_eq!(names.get(&span(3)).map(|n| &n[..]), Some(&b"c"[..]));
        assert_eq!(names.get(&span(1)).map(|n| &n[..]), Some(&b"d"[..]));
        assert_eq!(names.get(&span(2)).map(|n| &n[..]), Some(&b"b"[..]));
    }
}
