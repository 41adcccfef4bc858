//! Finding things in source text that values do not carry a span for, such as one
//! string of a list: the string literal is looked for just after the binding that
//! holds the list. Falls back to the binding's own span when it is not found.

use lang::{Machine, Span};

/// How far after a binding's name its value is looked for.
const SEARCH_WINDOW: usize = 8192;

/// The span of the string literal `"text"` written shortly after `near`.
pub fn literal_span(machine: &Machine, near: Span, text: &str) -> Option<Span> {
    let file = machine.sources.get(near.file)?;
    let start = near.start as usize;
    let end = (start + SEARCH_WINDOW).min(file.text.len());
    let window = file.text.get(start..end)?;
    let needle = format!("\"{text}\"");
    let position = window
        .windows(needle.len())
        .position(|candidate| candidate == needle.as_bytes())?;
    Some(Span::new(
        near.file,
        start + position,
        start + position + needle.len(),
    ))
}
