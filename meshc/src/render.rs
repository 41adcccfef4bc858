//! Renders diagnostics for people (miette, on a terminal or plain) and for tools
//! (JSON with byte and line/column ranges). The only place diagnostics meet a
//! terminal. Everything shown comes from the repository (which may hold a hostile
//! module) and reaches the terminal escaped: messages with `plan::display::escaped`,
//! source lines with each control or bidirectional character replaced by as many `?`
//! as it has bytes, so spans still point at the same bytes. An age private key
//! anywhere in a message or a source line is blotted out the same way
//! (`compiler::redact_private_keys`).

use lang::{Diagnostic, Label, Severity, Sources, Span};
use miette::{LabeledSpan, MietteDiagnostic, NamedSource, Report};

/// How many trace frames are shown without `--trace`.
pub const DEFAULT_TRACE_FRAMES: usize = 3;

/// Text for the terminal: controls and bidirectional controls written out.
fn shown(text: &str) -> String {
    plan::display::escaped(&compiler::redact_private_keys(text)).into_owned()
}

/// Text for JSON: what `shown` would print, without the terminal escaping.
fn redacted(text: &str) -> String {
    compiler::redact_private_keys(text).into_owned()
}

/// A source file for the terminal: line breaks and tabs kept, every other control or
/// bidirectional character (an escape sequence in a string literal, an override that
/// reorders the line) replaced by `?`s of its length in bytes, so offsets stay.
fn printable_source(text: &str) -> String {
    let text = &*compiler::redact_private_keys(text);
    if !text
        .chars()
        .any(|c| plan::display::is_unsafe_to_print(c) && !matches!(c, '\n' | '\t'))
    {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        if plan::display::is_unsafe_to_print(character) && !matches!(character, '\n' | '\t') {
            out.extend(std::iter::repeat_n('?', character.len_utf8()));
        } else {
            out.push(character);
        }
    }
    out
}

fn source_of(sources: &Sources, span: Span) -> Option<NamedSource<String>> {
    let file = sources.get(span.file)?;
    Some(NamedSource::new(
        shown(&file.name),
        printable_source(&same_length_text(&file.text)),
    ))
}

/// `bytes` as text of the same length: each byte that is not part of valid UTF-8
/// becomes `?`. Labels are byte offsets into the file, so the text miette draws must
/// keep every byte where it was (`from_utf8_lossy` makes each such byte a
/// three-byte U+FFFD, which moved labels to other lines, and past what the width
/// check had measured, into a panic of miette's).
fn same_length_text(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        text.extend(std::iter::repeat_n('?', chunk.invalid().len()));
    }
    text
}

fn labeled(label: &Label, primary: bool) -> LabeledSpan {
    let text = if label.message.is_empty() {
        None
    } else {
        Some(shown(&label.message))
    };
    if primary {
        LabeledSpan::new_primary_with_span(text, (label.span.start as usize, label.span.len()))
    } else {
        LabeledSpan::new_with_span(text, (label.span.start as usize, label.span.len()))
    }
}

pub fn location(sources: &Sources, span: Span) -> String {
    match sources.get(span.file) {
        Some(file) => {
            let (line, column) = file.line_column(span.start);
            format!("{}:{line}:{column}", shown(&file.name))
        }
        None => "<unknown>".to_string(),
    }
}

/// A message of `builtins.trace` or `builtins.warn` as `check`, `build` and the
/// editor show it: `trace: MESSAGE (FILE:LINE:COLUMN)`, escaped like every text
/// from the repository.
pub fn traced(traced: &lang::Traced, sources: &Sources) -> String {
    format!(
        "{}: {} ({})",
        traced.kind.prefix(),
        shown(&traced.message),
        location(sources, traced.span)
    )
}

/// A message of `builtins.trace` or `builtins.warn` as `meshc eval` and `meshc repl`
/// print it, as `nix-instantiate` and `nix repl` do: `trace: MESSAGE`, without a
/// location, with any age private key blotted out, as in every other message
/// `meshc` prints. Escaped (`\u{1b}`) when it goes to a terminal (`terminal`):
/// the message is the repository's text, and its escape sequences would drive the
/// terminal; written to a pipe or a file it is Nix's bytes.
pub fn traced_bare(traced: &lang::Traced, terminal: bool) -> String {
    let message = redacted(&traced.message);
    if terminal {
        format!(
            "{}: {}",
            traced.kind.prefix(),
            plan::display::escaped(&message)
        )
    } else {
        format!("{}: {}", traced.kind.prefix(), message)
    }
}

/// Labels whose lines (with the line of context either side) are longer than this
/// are shown as a location, not drawn: miette's padding overflows past 65,535
/// columns, it reads a whole line per label, and a line that long is no help on a
/// terminal.
const MAX_DRAWN_LINES_LENGTH: usize = 3 * 4096;

/// Are the lines a label of `diagnostic` in `primary`'s file is drawn on too long?
fn is_too_wide(diagnostic: &Diagnostic, primary: &Label, sources: &Sources) -> bool {
    let Some(file) = sources.get(primary.span.file) else {
        return false;
    };
    let too_wide = |label: &Label| {
        let (line, _) = file.line_column(label.span.start);
        let start = file.line_start(line.saturating_sub(2));
        let (end_line, _) = file.line_column(label.span.end);
        let next_line_start = file.line_start(end_line);
        let rest = file.text.get(next_line_start..).unwrap_or_default();
        let end = next_line_start
            + rest
                .iter()
                .take(MAX_DRAWN_LINES_LENGTH)
                .take_while(|byte| **byte != b'\n')
                .count();
        end.saturating_sub(start) > MAX_DRAWN_LINES_LENGTH
    };
    std::iter::once(primary)
        .chain(&diagnostic.secondary)
        .filter(|label| label.span.file == primary.span.file)
        .any(too_wide)
}

/// The diagnostic as miette renders it, plus the trace frames.
pub fn render(diagnostic: &Diagnostic, sources: &Sources, full_trace: bool, color: bool) -> String {
    let severity = match diagnostic.severity {
        Severity::Error => miette::Severity::Error,
        Severity::Warning => miette::Severity::Warning,
        Severity::Note => miette::Severity::Advice,
    };
    let mut inner = MietteDiagnostic::new(shown(&diagnostic.message))
        .with_code(diagnostic.code.as_str())
        .with_severity(severity);
    if let Some(help) = &diagnostic.help {
        inner = inner.with_help(shown(help));
    }
    let mut other_files: Vec<&Label> = Vec::new();
    let mut source = None;
    let primary = diagnostic.primary.as_ref();
    let too_wide = primary.filter(|primary| is_too_wide(diagnostic, primary, sources));
    if let Some(primary) = too_wide {
        // shown as locations: miette cannot draw a label this far into a line
        other_files.push(primary);
        other_files.extend(&diagnostic.secondary);
    } else if let Some(primary) = primary {
        source = source_of(sources, primary.span);
        let mut labels = vec![labeled(primary, true)];
        for secondary in &diagnostic.secondary {
            if secondary.span.file == primary.span.file {
                labels.push(labeled(secondary, false));
            } else {
                other_files.push(secondary);
            }
        }
        inner = inner.with_labels(labels);
    }
    let report = match source {
        Some(source) => Report::new(inner).with_source_code(source),
        None => Report::new(inner),
    };
    let handler = miette::GraphicalReportHandler::new_themed(if color {
        miette::GraphicalTheme::unicode()
    } else {
        miette::GraphicalTheme::unicode_nocolor()
    })
    .with_context_lines(1);
    let mut out = String::new();
    if handler.render_report(&mut out, report.as_ref()).is_err() {
        out = format!(
            "error[{}]: {}\n",
            diagnostic.code,
            shown(&diagnostic.message)
        );
    }
    for label in other_files {
        out.push_str(&format!(
            "  note: {} ({})\n",
            shown(&label.message),
            location(sources, label.span)
        ));
    }
    let frames = if full_trace {
        diagnostic.trace.len()
    } else {
        DEFAULT_TRACE_FRAMES.min(diagnostic.trace.len())
    };
    for frame in &diagnostic.trace[..frames] {
        out.push_str(&format!(
            "  … {} at {}\n",
            shown(&frame.message),
            location(sources, frame.span)
        ));
    }
    if frames < diagnostic.trace.len() {
        out.push_str(&format!(
            "  … and {} more frames (run with --trace to see them)\n",
            diagnostic.trace.len() - frames
        ));
    }
    out
}

/// One diagnostic as JSON: code, severity, message, file, byte range, line/column
/// range, labels and help.
pub fn to_json(diagnostic: &Diagnostic, sources: &Sources) -> serde_json::Value {
    let label_json = |label: &Label| -> serde_json::Value {
        let file = sources.get(label.span.file);
        let (start_line, start_column) = file
            .map(|f| f.line_column(label.span.start))
            .unwrap_or((0, 0));
        let (end_line, end_column) = file
            .map(|f| f.line_column(label.span.end))
            .unwrap_or((0, 0));
        serde_json::json!({
            "file": file.map(|f| f.name.clone()),
            "start": label.span.start,
            "end": label.span.end,
            "start_line": start_line,
            "start_column": start_column,
            "end_line": end_line,
            "end_column": end_column,
            "message": redacted(&label.message),
        })
    };
    serde_json::json!({
        "code": diagnostic.code.as_str(),
        "severity": diagnostic.severity.as_str(),
        "message": redacted(&diagnostic.message),
        "primary": diagnostic.primary.as_ref().map(label_json),
        "labels": diagnostic.secondary.iter().map(label_json).collect::<Vec<_>>(),
        "help": diagnostic.help.as_deref().map(redacted),
        "trace": diagnostic.trace.iter().map(label_json).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_lines_keep_their_offsets_and_lose_their_escapes() {
        let text = "a = \"\u{1b}[2J\u{202E}x\";\n\tb = 1;\r\n";
        let printable = printable_source(text);
        assert_eq!(printable.len(), text.len());
        assert_eq!(printable, "a = \"?[2J???x\";\n\tb = 1;?\n");
    }

    /// miette panicked ("formatting argument out of range") drawing a label more
    /// than 65,535 columns into its line.
    #[test]
    fn label_far_into_a_long_line_is_shown_as_a_location() {
        let mut sources = Sources::new();
        let mut text = "a".repeat(70_000);
        text.push_str(" b");
        let file = sources.add(
            "long.nix".to_string(),
            None,
            std::sync::Arc::from(text.as_bytes()),
        );
        let diagnostic =
            Diagnostic::error(lang::codes::UNDEFINED_VARIABLE, "undefined variable `b`")
                .with_primary(Span::new(file, 70_001, 70_002), "not defined in this scope")
                .with_help("bind `b`");
        let rendered = render(&diagnostic, &sources, false, false);
        assert!(rendered.contains("undefined variable `b`"), "{rendered}");
        assert!(
            rendered.contains("not defined in this scope (long.nix:1:70002)"),
            "{rendered}"
        );
    }

    #[test]
    fn label_on_a_short_line_is_drawn() {
        let mut sources = Sources::new();
        let file = sources.add(
            "short.nix".to_string(),
            None,
            std::sync::Arc::from(&b"x: y"[..]),
        );
        let diagnostic =
            Diagnostic::error(lang::codes::UNDEFINED_VARIABLE, "undefined variable `y`")
                .with_primary(Span::new(file, 3, 4), "not defined in this scope")
                .with_help("bind `y`");
        let rendered = render(&diagnostic, &sources, false, false);
        assert!(
            rendered.contains("╰── not defined in this scope"),
            "{rendered}"
        );
    }
}
