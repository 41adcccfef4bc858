//! Hover, go to definition and completion: answered on the main loop from the
//! buffer's syntax tree (`lang::navigate`) and the last index of the repository,
//! never by evaluating.

use std::path::Path;

use lang::navigate::{self, Found};
use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionTextEdit, Documentation, Hover, HoverContents,
    Location, MarkupContent, MarkupKind, Position, Range, TextEdit, Url,
};

use crate::lsp::analysis::{self, Index, ModuleInfo, OptionInfo};
use crate::lsp::builtin_docs;
use crate::lsp::documents::{Document, Encoding, LineIndex};

/// What a request about one buffer can see.
pub struct View<'a> {
    pub document: &'a Document,
    pub uri: &'a Url,
    /// The repository the buffer belongs to, if any.
    pub root: Option<&'a Path>,
    pub index: Option<&'a Index>,
    pub encoding: Encoding,
    /// Names in scope in every file without `builtins.` (`map`, `toString`).
    pub is_global: &'a dyn Fn(&str) -> bool,
}

/// Which kind of repository file a buffer is.
enum FileRole {
    Inventory,
    Module(String),
    Other,
}

impl View<'_> {
    fn role(&self) -> FileRole {
        let Some(root) = self.root else {
            return FileRole::Other;
        };
        let Ok(relative) = self.document.path.strip_prefix(root) else {
            return FileRole::Other;
        };
        let parts: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        match parts.as_slice() {
            [file] if file == "mesh.nix" => FileRole::Inventory,
            [modules, name, file] if modules == "modules" && file == "module.nix" => {
                FileRole::Module(name.clone())
            }
            _ => FileRole::Other,
        }
    }

    fn module(&self, name: &str) -> Option<&ModuleInfo> {
        self.index.and_then(|index| index.modules.get(name))
    }

    fn line_index(&self) -> LineIndex<'_> {
        LineIndex::new(self.document.text.as_bytes())
    }

    fn offset(&self, position: Position) -> usize {
        self.line_index().offset(position, self.encoding)
    }

    fn range(&self, span: lang::Span) -> Range {
        self.line_index()
            .range(span.start as usize, span.end as usize, self.encoding)
    }

    fn found(&self, position: Position) -> Option<Found> {
        let parsed = lang::parser::parse(self.document.text.as_bytes(), lang::FileId(0));
        navigate::find(&parsed.expr, self.offset(position) as u32)
    }

    /// What the thing at `position` names, in this repository's terms.
    fn target(&self, position: Position) -> Option<(Target, lang::Span)> {
        let found = self.found(position)?;
        let role = self.role();
        Some(match found {
            Found::AttrName {
                path,
                index,
                span,
                in_value: true,
            } => match (&role, path.as_slice()) {
                (FileRole::Inventory, [nodes, _, settings, module, rest @ ..])
                    if nodes == "nodes" && settings == "settings" =>
                {
                    match (index, rest) {
                        (3, _) => (Target::Module(module.clone()), span),
                        (4, [setting, ..]) => (
                            Target::Setting {
                                module: module.clone(),
                                name: setting.clone(),
                            },
                            span,
                        ),
                        _ => return None,
                    }
                }
                (FileRole::Module(module), [settings, setting, ..])
                    if settings == "settings" && index == 1 =>
                {
                    (
                        Target::Setting {
                            module: module.clone(),
                            name: setting.clone(),
                        },
                        span,
                    )
                }
                _ => return None,
            },
            Found::String {
                text,
                span,
                binding,
            } if matches!(
                binding.last().map(String::as_str),
                Some("modules" | "requires")
            ) =>
            {
                (Target::Module(text), span)
            }
            Found::Variable {
                name,
                span,
                bound_at,
            } => match bound_at {
                Some(bound) => (Target::Binding(bound), span),
                None if (self.is_global)(&name) => (Target::Builtin(name), span),
                None => return None,
            },
            Found::Selected {
                base: Some(base),
                path,
                index,
                span,
            } => match (base.as_str(), index, &role) {
                ("builtins", 0, _) => (Target::Builtin(path[0].clone()), span),
                ("settings", 0, FileRole::Module(module)) => (
                    Target::Setting {
                        module: module.clone(),
                        name: path[0].clone(),
                    },
                    span,
                ),
                _ => return None,
            },
            _ => return None,
        })
    }
}

enum Target {
    Module(String),
    Setting {
        module: String,
        name: String,
    },
    Builtin(String),
    /// A variable bound in this file at this span.
    Binding(lang::Span),
}

/// Text from the repository (a description, a setting's default) as the editor
/// gets it: an age private key in it blotted out, as in the diagnostics.
fn blotted(text: String) -> String {
    match compiler::redact_private_keys(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(redacted) => redacted,
    }
}

fn markdown(value: String, range: Range) -> Hover {
    Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: blotted(value),
        }),
        range: Some(range),
    }
}

fn module_text(module: &ModuleInfo) -> String {
    let origin = if module.file.is_some() {
        "module of the repository"
    } else {
        "standard module"
    };
    let mut text = format!("**`{}`** — {origin}", module.name);
    if let Some(description) = &module.description {
        text.push_str("\n\n");
        text.push_str(description);
    }
    if !module.options.is_empty() {
        text.push_str("\n\nsettings: ");
        text.push_str(&lang::diagnostic::quoted(module.options.keys()));
    }
    text
}

fn setting_text(module: &str, name: &str, option: &OptionInfo) -> String {
    let mut text = format!(
        "**`{module}.{name}`** — setting of module `{module}`\n\ntype: `{}` ({})",
        option.type_name, option.type_description
    );
    match &option.default {
        Some(default) => text.push_str(&format!("\\\ndefault: `{default}`")),
        None => text.push_str("\\\nno default: every node that runs the module sets it"),
    }
    if !option.description.is_empty() {
        text.push_str("\n\n");
        text.push_str(&option.description);
    }
    text
}

fn builtin_text(name: &str) -> Option<String> {
    let (usage, description) = builtin_docs::lookup(name)?;
    Some(format!("```nix\n{usage}\n```\n\n{description}"))
}

pub fn hover(view: &View<'_>, position: Position) -> Option<Hover> {
    let (target, span) = view.target(position)?;
    let range = view.range(span);
    let text = match target {
        Target::Module(name) => module_text(view.module(&name)?),
        Target::Setting { module, name } => {
            let option = view.module(&module)?.options.get(&name)?;
            setting_text(&module, &name, option)
        }
        Target::Builtin(name) => builtin_text(&name)?,
        Target::Binding(_) => return None,
    };
    Some(markdown(text, range))
}

pub fn definition(view: &View<'_>, position: Position) -> Option<Location> {
    let (target, _) = view.target(position)?;
    match target {
        Target::Module(name) => analysis::file_start(view.module(&name)?.file.as_deref()?),
        Target::Setting { module, name } => {
            view.module(&module)?.options.get(&name)?.declared.clone()
        }
        Target::Binding(span) => Some(Location::new(view.uri.clone(), view.range(span))),
        Target::Builtin(_) => None,
    }
}

fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'\'')
}

/// The name being typed just before `offset` and where it starts.
fn partial_name(text: &[u8], offset: usize) -> (usize, &str) {
    let mut start = offset;
    while start > 0 && is_name_byte(text[start - 1]) {
        start -= 1;
    }
    (
        start,
        std::str::from_utf8(&text[start..offset]).unwrap_or(""),
    )
}

/// The dotted path written just before `start` (`settings.postgres.` gives
/// `["settings", "postgres"]`), empty if no `.` is there.
fn dotted_before(text: &[u8], start: usize) -> Vec<String> {
    let mut path = Vec::new();
    let mut end = start;
    while end > 0 && text[end - 1] == b'.' {
        let (name_start, name) = partial_name(text, end - 1);
        if name.is_empty() {
            break;
        }
        path.insert(0, name.to_string());
        end = name_start;
    }
    path
}

/// Whether `offset` is inside a string of a `modules = [ ... ]` or `requires = ...[`
/// list: the innermost open `[` before it follows `modules =` or `requires =`
/// (possibly through a function's `{ ... }:` head), and an odd number of quotes lie
/// between them.
fn in_module_list(text: &[u8], offset: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote = None;
    let mut index = offset;
    while index > 0 {
        index -= 1;
        match text[index] {
            b'"' if quote.is_none() => quote = Some(index),
            b']' => depth += 1,
            b'[' if depth > 0 => depth -= 1,
            b'[' => {
                let head = String::from_utf8_lossy(&text[..index]);
                let head = head.trim_end();
                let head = match head.strip_suffix(':') {
                    Some(function) => function
                        .trim_end()
                        .strip_suffix('}')
                        .and_then(|h| h.rfind('{').map(|open| &h[..open]))
                        .unwrap_or(head),
                    None => head,
                };
                let head = head.trim_end().strip_suffix('=')?.trim_end();
                let field = head
                    .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()?;
                if field != "modules" && field != "requires" {
                    return None;
                }
                let quotes = text[index..offset].iter().filter(|b| **b == b'"').count();
                return (quotes % 2 == 1).then_some(quote.unwrap_or(index) + 1);
            }
            b';' | b'=' if depth == 0 => return None,
            _ => {}
        }
    }
    None
}

pub fn completion(view: &View<'_>, position: Position) -> Vec<CompletionItem> {
    let text = view.document.text.as_bytes();
    let offset = view.offset(position).min(text.len());
    let (start, partial) = partial_name(text, offset);
    let replace = Range::new(view.line_index().position(start, view.encoding), position);
    let item =
        |label: &str, kind, detail: Option<String>, documentation: Option<String>| CompletionItem {
            label: label.to_string(),
            kind: Some(kind),
            detail: detail.map(blotted),
            documentation: documentation.map(|value| {
                Documentation::MarkupContent(MarkupContent {
                    kind: MarkupKind::Markdown,
                    value: blotted(value),
                })
            }),
            text_edit: Some(CompletionTextEdit::Edit(TextEdit::new(
                replace,
                label.to_string(),
            ))),
            ..CompletionItem::default()
        };
    if let Some(string_start) = in_module_list(text, offset) {
        let typed = String::from_utf8_lossy(&text[string_start..offset]).into_owned();
        let replace = Range::new(
            view.line_index().position(string_start, view.encoding),
            position,
        );
        let Some(index) = view.index else {
            return Vec::new();
        };
        return index
            .modules
            .values()
            .filter(|module| module.name.starts_with(&typed))
            .map(|module| CompletionItem {
                text_edit: Some(CompletionTextEdit::Edit(TextEdit::new(
                    replace,
                    module.name.clone(),
                ))),
                ..item(
                    &module.name,
                    CompletionItemKind::MODULE,
                    module.description.clone(),
                    Some(module_text(module)),
                )
            })
            .collect();
    }
    let path = dotted_before(text, start);
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    let settings_of = |module: &str| -> Vec<CompletionItem> {
        let Some(info) = view.module(module) else {
            return Vec::new();
        };
        info.options
            .iter()
            .filter(|(name, _)| name.starts_with(partial))
            .map(|(name, option)| {
                item(
                    name,
                    CompletionItemKind::FIELD,
                    Some(option.type_name.clone()),
                    Some(setting_text(module, name, option)),
                )
            })
            .collect()
    };
    match (path.as_slice(), view.role()) {
        ([.., "builtins"], _) => builtin_docs::BUILTINS
            .iter()
            .filter(|(name, _, _)| name.starts_with(partial) && *name != "builtins")
            .map(|(name, usage, description)| {
                item(
                    name,
                    CompletionItemKind::FUNCTION,
                    Some((*usage).to_string()),
                    Some((*description).to_string()),
                )
            })
            .collect(),
        ([.., "settings", module], FileRole::Inventory) => settings_of(module),
        (["settings"], FileRole::Module(module)) => settings_of(&module),
        ([.., "settings"], FileRole::Inventory) => view
            .index
            .map(|index| {
                index
                    .modules
                    .values()
                    .filter(|module| module.name.starts_with(partial))
                    .map(|module| {
                        item(
                            &module.name,
                            CompletionItemKind::MODULE,
                            module.description.clone(),
                            Some(module_text(module)),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_lists_are_recognised_through_function_heads() {
        let text = b"{ requires = { node, ... }: [ \"net";
        assert_eq!(in_module_list(text, text.len()), Some(31));
        let text = b"{ modules = [ \"a\" \"po";
        assert_eq!(in_module_list(text, text.len()), Some(19));
        let text = b"{ modules = [ \"a\" ";
        assert_eq!(in_module_list(text, text.len()), None);
        let text = b"{ ports = [ \"a";
        assert_eq!(in_module_list(text, text.len()), None);
    }

    #[test]
    fn dotted_paths_before_the_cursor() {
        let text = b"x = settings.postgres.po";
        let (start, partial) = partial_name(text, text.len());
        assert_eq!(partial, "po");
        assert_eq!(dotted_before(text, start), ["settings", "postgres"]);
    }
}
