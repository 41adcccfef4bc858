//! What `meshc options` and `meshc show` read: every module's settings as declared
//! (name, type, default, description, where), and one node's effective
//! configuration as the pipeline made it (see `pipeline::inspect_node`). Views are
//! plain strings, ready to print. Must not print sealed content or plaintext: a
//! secret is shown as `<secret>`.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use lang::{Diagnostic, Limits, Machine, Sources, Span, Value};

use crate::module::{self, Module};
use crate::prelude;
use crate::repository::{self, Origin};
use crate::stdlib::{self, MeshLoader};
use crate::types::CheckContext;

/// One setting as its module declares it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SettingDeclaration {
    pub name: String,
    #[serde(rename = "type")]
    pub setting_type: String,
    /// The default as Nix prints it, or None when the setting must be given.
    pub default: Option<String>,
    pub description: String,
    /// `file:line` (repository-relative, `<stdlib>/...` for the standard library).
    pub declared: String,
}

/// One module as `meshc options` lists it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ModuleDeclaration {
    pub name: String,
    /// `repository` or `standard`.
    pub origin: &'static str,
    pub file: String,
    pub description: Option<String>,
    pub settings: Vec<SettingDeclaration>,
    /// The fields the module has among `requires`, `collects`, `contributes`,
    /// `provides`, `consumes`, `needs`, `mirrors`, `artifacts`, `shapes` (their values
    /// depend on the node, so only their presence is known without one).
    pub fields: Vec<String>,
    /// What `collects`, `provides`, `consumes` and `needs` declare, when the field is
    /// a plain set (not a function of the node): field -> entries (`name`, or
    /// `name: type` for a collection). A field that is a function is `per node`.
    pub declares: Vec<DeclaredEntries>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DeclaredEntries {
    pub field: String,
    /// None when the field is a function of the node.
    pub entries: Option<Vec<String>>,
}

/// Every module of a repository (the standard library's included) with its settings.
pub struct ModuleListing {
    pub modules: Vec<ModuleDeclaration>,
    pub diagnostics: Vec<Diagnostic>,
    pub sources: Sources,
}

/// A value as `nix-instantiate --eval --strict` prints it, a secret as `<secret>`.
pub fn print_value(machine: &mut Machine, value: &Value) -> String {
    if contains_opaque(value) {
        return "<secret>".to_string();
    }
    match machine.print_strict(value) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        // a secret deeper inside, reached while forcing
        Err(error) if error.code == lang::codes::OPAQUE_MISUSE => "<secret>".to_string(),
        Err(_) => "<cannot be printed>".to_string(),
    }
}

fn contains_opaque(value: &Value) -> bool {
    match value {
        Value::Opaque(_) => true,
        Value::List(items) => items.iter().any(contains_opaque),
        Value::Attrs(attrs) => attrs.iter().any(|attr| contains_opaque(&attr.value)),
        _ => false,
    }
}

/// `file:line` of a span.
pub fn place(machine: &Machine, span: Span, root: &Path) -> String {
    let (file, line, _) = prelude::location(machine, span, root);
    format!("{file}:{line}")
}

/// Reads every module of the repository at `root` and lists its declarations.
pub fn list_modules(root: &Path) -> ModuleListing {
    let repository = match repository::load(root) {
        Ok(repository) => repository,
        Err(diagnostic) => {
            return ModuleListing {
                modules: Vec::new(),
                diagnostics: vec![*diagnostic],
                sources: Sources::new(),
            };
        }
    };
    let repository = &repository;
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("mesh-options".to_string())
            .stack_size(lang::eval::EVAL_STACK_SIZE)
            .spawn_scoped(scope, move || list_on_this_thread(repository))
            .map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .unwrap_or_else(|error| ModuleListing {
                modules: Vec::new(),
                diagnostics: vec![Diagnostic::no_thread(format!(
                    "cannot start an evaluation thread: {error}"
                ))],
                sources: Sources::new(),
            })
    })
}

fn list_on_this_thread(repository: &repository::Repository) -> ModuleListing {
    let loader = Rc::new(MeshLoader::new(repository.root.clone()));
    let mut machine = Machine::new(
        loader,
        vec![repository.root.clone(), PathBuf::from(stdlib::VIRTUAL_ROOT)],
        Limits::default(),
    );
    let node_names: Vec<String> = Vec::new();
    let failed_nodes = std::collections::BTreeSet::new();
    let context = CheckContext {
        node_names: &node_names,
        failed_nodes: &failed_nodes,
    };
    let (prelude, _) = prelude::prelude(&repository.root, &mut machine);
    let mut diagnostics = Vec::new();
    let mut modules = Vec::new();
    for (name, location) in &repository.modules {
        match module::load(
            &mut machine,
            name,
            location,
            &prelude,
            &context,
            &mut diagnostics,
        ) {
            Ok(Some(module)) => modules.push(declaration(&mut machine, &module, &repository.root)),
            Ok(None) => {}
            Err(error) => diagnostics.push(*error),
        }
    }
    let root = repository.root.clone();
    let mut sources = std::mem::take(&mut machine.sources);
    sources.rename(|file| match &file.path {
        Some(path) => prelude::display_path(&path.display().to_string(), &root),
        None => file.name.clone(),
    });
    ModuleListing {
        modules,
        diagnostics,
        sources,
    }
}

fn declaration(machine: &mut Machine, module: &Module, root: &Path) -> ModuleDeclaration {
    let settings = module
        .options
        .values()
        .map(|option| SettingDeclaration {
            name: option.name.clone(),
            setting_type: option.option_type.name(),
            default: option
                .default
                .as_ref()
                .map(|value| print_value(machine, value)),
            description: option.description.clone(),
            declared: place(machine, option.span, root),
        })
        .collect();
    let fields = module::FIELDS
        .iter()
        .map(|(field, _)| *field)
        .filter(|field| !matches!(*field, "description" | "settings") && module.has_field(field))
        .map(str::to_string)
        .collect();
    let declares = ["collects", "provides", "consumes", "needs"]
        .into_iter()
        .filter(|field| module.has_field(field))
        .map(|field| DeclaredEntries {
            field: field.to_string(),
            entries: declared_entries(machine, module, field),
        })
        .collect();
    let (file, _, _) = prelude::location(machine, module.span, root);
    ModuleDeclaration {
        name: module.name.clone(),
        origin: match module.location.origin {
            Origin::Repository => "repository",
            Origin::Standard => "standard",
        },
        file,
        description: module.description.clone(),
        settings,
        fields,
        declares,
    }
}

/// The entry names of a module field that is a plain set, without calling anything.
fn declared_entries(machine: &mut Machine, module: &Module, field: &str) -> Option<Vec<String>> {
    let entry = module.record.get_attr(field.as_bytes())?;
    let span = entry.span.unwrap_or(module.span);
    let Ok(Value::Attrs(set)) = machine.force(&entry.value.clone(), span) else {
        return None;
    };
    let mut entries = Vec::new();
    for item in set.iter() {
        let name = String::from_utf8_lossy(&item.name).into_owned();
        let described = if field == "collects" {
            match crate::types::read_type(machine, &item.value, span) {
                Ok(Ok(collection_type)) => format!("{name}: {}", collection_type.name()),
                _ => name,
            }
        } else {
            name
        };
        entries.push(described);
    }
    Some(entries)
}

/// Markdown of the listed modules: one section per module, a table of its settings.
pub fn render_modules_markdown(modules: &[ModuleDeclaration]) -> String {
    let mut out = String::new();
    for module in modules {
        out.push_str(&format!("## `{}`\n\n", module.name));
        if let Some(description) = &module.description {
            out.push_str(&format!("{}\n\n", description.trim()));
        }
        out.push_str(&format!("Declared in `{}`.", module.file));
        if !module.fields.is_empty() {
            let fields: Vec<String> = module.fields.iter().map(|f| format!("`{f}`")).collect();
            out.push_str(&format!(" Fields: {}.", fields.join(", ")));
        }
        out.push_str("\n\n");
        for declared in &module.declares {
            let entries = match &declared.entries {
                Some(entries) => entries
                    .iter()
                    .map(|entry| format!("`{}`", cell(entry)))
                    .collect::<Vec<_>>()
                    .join(", "),
                None => "per node (a function of `node` and `settings`)".to_string(),
            };
            out.push_str(&format!("- {}: {entries}\n", declared.field));
        }
        if !module.declares.is_empty() {
            out.push('\n');
        }
        if module.settings.is_empty() {
            out.push_str("No settings.\n\n");
            continue;
        }
        out.push_str("| setting | type | default | description | declared |\n");
        out.push_str("| --- | --- | --- | --- | --- |\n");
        for setting in &module.settings {
            let default = match &setting.default {
                Some(default) => format!("`{}`", cell(default)),
                None => "(required)".to_string(),
            };
            out.push_str(&format!(
                "| `{}` | `{}` | {} | {} | `{}` |\n",
                setting.name,
                cell(&setting.setting_type),
                default,
                cell(&setting.description),
                setting.declared
            ));
        }
        out.push('\n');
    }
    out
}

/// Text that fits in one markdown table cell.
fn cell(text: &str) -> String {
    text.replace('\n', " ").replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_printed_as_secret_never_as_its_sealed_content() {
        let loader = Rc::new(MeshLoader::new(PathBuf::from("/nonexistent")));
        let mut machine = Machine::new(loader, Vec::new(), Limits::default());
        let secret = Value::Opaque(Rc::new(Box::new(crate::link::SecretHandle {
            sealed: "SEALED-CONTENT".to_string(),
        })));
        assert_eq!(print_value(&mut machine, &secret), "<secret>");
        let inside = Value::List(lang::value::List::from(vec![Value::Int(1), secret]));
        assert_eq!(print_value(&mut machine, &inside), "<secret>");
        assert_eq!(print_value(&mut machine, &Value::Int(3)), "3");
    }
}
