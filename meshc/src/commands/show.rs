//! `meshc show NODE`: one node's effective configuration, as the compiler made it:
//! its modules (assigned, or required and by whom), every setting with where its
//! value came from, every collection with its contributors, its links, its needs and
//! its shapes grouped by module. Must not print sealed content or plaintext: secrets
//! are `<secret>` with the path they are placed at; an age private key in a setting
//! is blotted out.

use std::fmt::Write as _;
use std::process::ExitCode;

use clap::Args;

use crate::cli::{ColorWhen, Format, RepositoryArgs};
use crate::terminal::{self, Failure};
use compiler::view::NodeView;

/// Show one node's modules, settings, collections, links and shapes, with sources
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  meshc show app1
  meshc show db1 --repo examples/homelab --format json | jq '.settings'

Exits 1 when the repository has an error (what could be made is still shown), or
(E120) when NODE is not in the inventory.")]
pub struct ShowArgs {
    /// The node, as named under `nodes` in `mesh.nix`
    #[arg(value_name = "NODE")]
    pub node: String,
    #[command(flatten)]
    pub repository: RepositoryArgs,
    /// `human` prints sections for reading; `json` one object
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Format::Human)]
    pub format: Format,
}

pub fn run(arguments: ShowArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    let root = arguments.repository.root(color)?;
    let (compilation, view) = compiler::inspect_node(&root, &arguments.node);
    terminal::report(&compilation.diagnostics, &compilation.sources, false, color);
    let failed = compilation.has_errors();
    let Some(view) = view else {
        return Ok(ExitCode::from(1));
    };
    let text = match arguments.format {
        Format::Human => render_human(&view),
        Format::Json => terminal::pretty_json(&view, "the node's view", color)?,
    };
    // a setting's value or default may hold an age private key, and any text the
    // repository wrote may hold escape sequences: neither reaches the terminal
    terminal::print_document(&text, matches!(arguments.format, Format::Json))?;
    Ok(super::status(failed))
}

/// The view as sections for reading.
pub fn render_human(view: &NodeView) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "node {} (declared at {})", view.node, view.declared);
    out.push_str("\nmodules\n");
    for module in &view.modules {
        let mut why = Vec::new();
        if let Some(at) = &module.assigned {
            why.push(format!("assigned at {at}"));
        }
        for requirement in &module.required_by {
            why.push(format!(
                "required by {} at {}",
                requirement.module, requirement.at
            ));
        }
        let _ = writeln!(out, "  {}: {}", module.name, why.join("; "));
    }
    out.push_str("\nsettings\n");
    for setting in &view.settings {
        let _ = writeln!(
            out,
            "  {}.{} = {}\n    ({} at {})",
            setting.module, setting.name, setting.value, setting.origin, setting.at
        );
    }
    section(&mut out, "collections", view.collections.is_empty());
    for collection in &view.collections {
        let contributors: Vec<String> = collection
            .contributors
            .iter()
            .map(|c| format!("{} at {}", c.module, c.at))
            .collect();
        let _ = writeln!(
            out,
            "  {}.{} = {}\n    (from {})",
            collection.module,
            collection.name,
            collection.value,
            if contributors.is_empty() {
                "no module".to_string()
            } else {
                contributors.join(", ")
            }
        );
    }
    render_links(&mut out, view);
    render_shapes(&mut out, view);
    out
}

fn section(out: &mut String, title: &str, empty: bool) {
    let _ = writeln!(out, "\n{title}{}", if empty { ": none" } else { "" });
}

fn render_links(out: &mut String, view: &NodeView) {
    section(out, "consumes", view.consumes.is_empty());
    for consume in &view.consumes {
        let provider = match (&consume.provider, &consume.address) {
            (Some(node), Some(address)) => format!("{node} ({address})"),
            (Some(node), None) => node.clone(),
            (None, _) => "no provider chosen".to_string(),
        };
        let _ = writeln!(
            out,
            "  {}.{}: `{}` from {}, login {}, {} ({})",
            consume.module,
            consume.name,
            consume.service,
            provider,
            consume.login,
            match (consume.credential, &consume.path) {
                (Some(credential), Some(path)) => format!("{credential} at {path}"),
                _ => "facts only".to_string(),
            },
            consume.at
        );
        if let Some(facts) = &consume.facts {
            let _ = writeln!(out, "    facts = {facts}");
        }
    }
    section(out, "provides", view.provides.is_empty());
    for provide in &view.provides {
        let consumers = if provide.consumers.is_empty() {
            "no consumer".to_string()
        } else {
            provide.consumers.join(", ")
        };
        let _ = writeln!(
            out,
            "  {}: `{}` to {} ({})",
            provide.module, provide.service, consumers, provide.at
        );
        let _ = writeln!(out, "    facts = {}", provide.facts);
    }
    section(out, "needs", view.needs.is_empty());
    for need in &view.needs {
        let _ = writeln!(
            out,
            "  {}.{}: {} at {} ({})",
            need.module, need.name, need.secret, need.path, need.at
        );
    }
}

fn render_shapes(out: &mut String, view: &NodeView) {
    section(out, "shapes", view.shapes.is_empty());
    let mut current: Option<&str> = None;
    for shape in &view.shapes {
        if current != Some(shape.module.as_str()) {
            let _ = writeln!(out, "  {}", shape.module);
            current = Some(shape.module.as_str());
        }
        let _ = writeln!(
            out,
            "    {} {} ({})",
            shape.kind, shape.identity, shape.source
        );
    }
}
