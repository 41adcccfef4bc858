//! Evaluates each module file once: the record it describes, its setting
//! declarations, and which arguments each field's function asks for (checked here,
//! once, against what the field's stage can know). Per-node work calls the fields.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use lang::codes;
use lang::compile::ParamIr;
use lang::diagnostic::did_you_mean;
use lang::value::{Attr, Attrs, EvalResult};
use lang::{Diagnostic, Machine, Span, Value};

use crate::prelude::OPTION_MARKER;
use crate::repository::{ModuleLocation, Origin, Repository};
use crate::types::{self, CheckContext, Type};

/// A module's fields and the arguments each one's function may take.
pub const FIELDS: &[(&str, &[&str])] = &[
    ("description", &[]),
    ("settings", &[]),
    ("requires", &["node", "settings"]),
    ("collects", &["node", "settings"]),
    ("contributes", &["node", "settings"]),
    ("provides", &["node", "settings"]),
    ("consumes", &["node", "settings"]),
    ("needs", &["node", "settings"]),
    ("mirrors", &["node", "settings"]),
    ("artifacts", &["node", "settings"]),
    (
        "shapes",
        &[
            "node",
            "settings",
            "collected",
            "credentials",
            "logins",
            "grants",
            "secrets",
            "images",
            "artifacts",
        ],
    ),
];

/// Why a stage cannot give an argument, for the diagnostic.
fn why_not(argument: &str) -> &'static str {
    match argument {
        "collected" => {
            "contributions are collected after resolution, settings and the other modules' fields"
        }
        "credentials" | "logins" | "grants" => {
            "credentials, logins and grants exist only after consumers are linked to providers"
        }
        "secrets" => "secrets are made after every need is known",
        "images" | "artifacts" => {
            "images and artifacts are pinned after every mirror and artifact is declared"
        }
        "node" | "settings" => "the module file itself is evaluated once for the whole fleet",
        "lib" => "there is no `lib` argument: the helpers are in the prelude, as `mesh.lib`",
        other => nixos_habit(other).unwrap_or("no stage gives it"),
    }
}

/// What a NixOS module's argument or name is in mesh, for the names NixOS users
/// reach for first.
fn nixos_habit(name: &str) -> Option<&'static str> {
    Some(match name {
        "lib" => {
            "nixpkgs' `lib` helpers are `mesh.lib` here: write `{ mesh, ... }:` and use `mesh.lib.optionals`, or `let inherit (mesh) lib; in ...`"
        }
        "pkgs" => {
            "mesh has no package set: a service runs a program already on the node, named by its absolute path (`exec = [ \"/usr/bin/redis-server\" ];`), and a container names an image"
        }
        "config" => {
            "mesh has no `config` fixpoint: a module reads its own settings as `settings` and what other modules give it as `collected`, each taken by the field that needs it (`shapes = { settings, ... }: [ ... ];`)"
        }
        "options" => {
            "a module declares what can be set in `settings`: `settings.port = mesh.option { type = mesh.types.port; default = 8080; description = \"...\"; };`"
        }
        "modulesPath" | "imports" => {
            "modules are found by name in `modules/`: one that needs another says `requires = [ \"name\" ];`"
        }
        _ => return None,
    })
}

/// What a function of nixpkgs' module system (which `mesh.lib` leaves out) comes
/// to in a mesh module.
fn module_system_habit(name: &str) -> Option<&'static str> {
    Some(match name {
        "mkDefault" | "mkForce" | "mkOverride" | "mkOptionDefault" => {
            "mesh has no priorities: a setting's `default` in `mesh.option` is what `mkDefault` gives, and a value the inventory sets for the node replaces it (what `mkForce` is for)"
        }
        "mkIf" => {
            "a conditional value is a plain `if cond then { ... } else { }`, or `mesh.lib.optionalAttrs cond { ... }` and `mesh.lib.optionals cond [ ... ]`"
        }
        "mkMerge" => {
            "values are merged by the language: sets with `//` (or `mesh.lib.recursiveUpdate`), lists with `++`; what several modules contribute is gathered for you"
        }
        "mkBefore" | "mkAfter" | "mkOrder" => {
            "lists have no order priorities: write them in the order wanted, joined with `++`"
        }
        "mkOption" | "mkEnableOption" | "mkPackageOption" => {
            "a setting is declared with `mesh.option`: `settings.enable = mesh.option { type = mesh.types.bool; default = false; description = \"...\"; };`"
        }
        "types" => {
            "the types of settings are `mesh.types` (`mesh.types.port`, `mesh.types.str`, ...)"
        }
        _ => return None,
    })
}

/// What a NixOS module's top-level field is in a mesh module.
fn nixos_field(field: &str) -> Option<&'static str> {
    Some(match field {
        "options" => {
            "what can be set is declared in `settings`: `settings.port = mesh.option { type = mesh.types.port; default = 8080; description = \"...\"; };`"
        }
        "imports" => nixos_habit("imports")?,
        "config" | "services" | "environment" | "systemd" | "networking" | "users" | "boot"
        | "security" => {
            "a mesh module sets no NixOS options: it declares what the node gets in `shapes` (`mesh.service`, `mesh.file`, `mesh.user`, ...), and what it gives other modules in `contributes`"
        }
        _ => return None,
    })
}

/// The help for a type `mesh.types` does not have: the ones it has, and the one a
/// NixOS type name comes to here.
fn types_help(name: &str) -> String {
    let instead = match name {
        "lines" | "string" | "nonEmptyStr" | "singleLineStr" | "commas" | "envVar" => Some("`str`"),
        "integer" | "ints" | "positiveInt" | "unsignedInt" | "signedInt" => Some("`int`"),
        "attrs" | "lazyAttrsOf" => Some("`attrsOf T`"),
        "submodule" | "submoduleWith" => Some("`record { ... }`"),
        "oneOf" | "either" => Some("`enum [ ... ]` for a choice of strings"),
        "anything" | "unspecified" | "raw" | "uniq" => Some("`any`"),
        "package" | "pathInStore" => Some("`path` (mesh has no package set)"),
        "number" => Some("`int` or `float`"),
        _ => None,
    };
    let names: Vec<String> = crate::prelude::TYPES
        .iter()
        .map(|name| format!("`{name}`"))
        .collect();
    let have = match names.split_last() {
        Some((last, rest)) => format!("`mesh.types` has {} and {last}", rest.join(", ")),
        None => String::new(),
    };
    match instead {
        Some(instead) => format!("{have}; NixOS's `{name}` is {instead} here"),
        None => have,
    }
}

/// What E021 says of a set whose only attribute is `mesh` (the arguments a module
/// is called with).
const ARGUMENTS_HAVE_ONLY_MESH: &str = "the set has `mesh`; use `or` to give a default";

/// An undefined `lib`, `pkgs`, `config` or `options` in a module file is a NixOS
/// habit: its help says what mesh has instead, where the language's says to bind the
/// name, which would be refused next (E109).
pub(crate) fn with_habit_help(mut diagnostic: Diagnostic) -> Diagnostic {
    // the attribute path E021 names (`attribute `lib.mkIf` missing`), read once
    let missing = (diagnostic.code == codes::MISSING_ATTRIBUTE)
        .then(|| {
            diagnostic
                .message
                .strip_prefix("attribute `")
                .and_then(|rest| rest.strip_suffix("` missing"))
        })
        .flatten()
        .map(str::to_string);
    if let Some(path) = missing {
        if let Some(name) = path.strip_prefix("types.") {
            diagnostic.help = Some(types_help(name));
        } else if let Some(help) = path
            // selected from `lib` (`mesh.lib.mkIf`, `lib.types`), or a `mk...` name
            // of the module system anywhere; not `settings.types`, maybe a typo
            .strip_prefix("lib.")
            .or_else(|| path.starts_with("mk").then_some(path.as_str()))
            .and_then(module_system_habit)
        {
            diagnostic.help = Some(help.to_string());
            // where `mesh.lib` is made (inside the standard library) says nothing
            diagnostic
                .secondary
                .retain(|label| label.message != "the set is defined here");
        } else if diagnostic.help.as_deref() == Some(ARGUMENTS_HAVE_ONLY_MESH) {
            // `mesh: { ... mesh.option ... }`: `mesh` is the set of the arguments
            diagnostic.help = Some(format!(
                "a module is called with the set `{{ mesh }}`, so a module written `mesh: ...` names that set `mesh`: write `{{ mesh, ... }}:` to take `mesh` out of it, and `mesh.{path}` is found"
            ));
        }
        return diagnostic;
    }
    if diagnostic.code == codes::UNDEFINED_VARIABLE
        && let Some(name) = diagnostic
            .message
            .strip_prefix("undefined variable `")
            .and_then(|rest| rest.strip_suffix('`'))
    {
        if let Some(habit) = nixos_habit(name) {
            diagnostic.help = Some(habit.to_string());
        } else if crate::prelude::TYPES.contains(&name) {
            // `listOf str`, the habit of `with lib.types;`
            diagnostic.help = Some(format!(
                "did you mean `mesh.types.{name}`? The types of settings are in `mesh.types` (or write `with mesh.types; ...` around them)"
            ));
        }
    }
    diagnostic
}

/// The modules a compilation has evaluated, as resolution looks them up. A set is
/// complete (every module of the repository was evaluated: one missing failed and
/// was reported) or partial (a build that may reuse evaluates a module only when a
/// node asks for it); a partial set notes the modules asked for and not there, for
/// the worker to evaluate and resolve the node again.
#[derive(Default)]
pub struct ModuleSet {
    pub loaded: BTreeMap<String, Module>,
    /// Modules whose files were evaluated and failed (the failure is reported).
    failed: BTreeSet<String>,
    complete: bool,
    wanted: RefCell<BTreeSet<String>>,
    /// A module that failed was asked for since [`ModuleSet::take_met_failed`]:
    /// what asked depends on that file, though it said nothing of it.
    met_failed: std::cell::Cell<bool>,
}

/// Why a known module is not in a [`ModuleSet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Absent {
    /// The repository has no such module.
    Unknown,
    /// Its file failed to evaluate; reported already.
    Failed,
    /// Not evaluated yet (a partial set): noted as wanted.
    NotLoaded,
}

impl ModuleSet {
    /// A set that will hold every module: what is not in it failed.
    pub fn complete() -> ModuleSet {
        ModuleSet {
            complete: true,
            ..ModuleSet::default()
        }
    }

    /// A set that holds what has been asked for so far.
    pub fn partial() -> ModuleSet {
        ModuleSet::default()
    }

    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Whether `name` was evaluated (loaded, or failed).
    pub fn tried(&self, name: &str) -> bool {
        self.loaded.contains_key(name) || self.failed.contains(name)
    }

    /// Records the outcome of evaluating module `name`.
    pub fn add(&mut self, name: &str, module: Option<Module>) {
        match module {
            Some(module) => {
                self.loaded.insert(name.to_string(), module);
            }
            None => {
                self.failed.insert(name.to_string());
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<&Module> {
        self.loaded.get(name)
    }

    pub fn get_key_value(&self, name: &str) -> Option<(&String, &Module)> {
        self.loaded.get_key_value(name)
    }

    /// Why `name` is not loaded, given the repository's module names; a known
    /// module a partial set has not evaluated is noted as wanted.
    pub fn absent(&self, name: &str, known: &[String]) -> Absent {
        let absent = self.absent_without_noting(name, known);
        if absent == Absent::NotLoaded {
            self.wanted.borrow_mut().insert(name.to_string());
        }
        absent
    }

    /// [`ModuleSet::absent`], noting nothing as wanted.
    pub fn absent_without_noting(&self, name: &str, known: &[String]) -> Absent {
        if !known.iter().any(|known| known == name) {
            Absent::Unknown
        } else if self.complete || self.failed.contains(name) {
            self.met_failed.set(true);
            Absent::Failed
        } else {
            Absent::NotLoaded
        }
    }

    /// Whether a module was asked for and is not loaded.
    pub fn has_wanted(&self) -> bool {
        !self.wanted.borrow().is_empty()
    }

    /// Whether a module that failed was asked for since the last call.
    pub fn take_met_failed(&self) -> bool {
        self.met_failed.replace(false)
    }

    /// The modules asked for since the last call that are not loaded.
    pub fn take_wanted(&self) -> BTreeSet<String> {
        std::mem::take(&mut *self.wanted.borrow_mut())
    }
}

#[derive(Clone, Debug)]
pub struct OptionDecl {
    pub name: String,
    pub option_type: Type,
    pub default: Option<Value>,
    pub description: String,
    /// Where the setting's name is declared.
    pub span: Span,
}

#[derive(Clone)]
pub struct Module {
    pub name: String,
    pub location: ModuleLocation,
    /// The whole module file.
    pub span: Span,
    pub record: Attrs,
    pub description: Option<String>,
    pub options: BTreeMap<String, OptionDecl>,
}

impl Module {
    pub fn field_span(&self, field: &str) -> Span {
        self.record
            .get_attr(field.as_bytes())
            .and_then(|attr| attr.span)
            .unwrap_or(self.span)
    }

    pub fn has_field(&self, field: &str) -> bool {
        self.record.contains(field.as_bytes())
    }
}

fn attr(name: &str, value: Value) -> Attr {
    Attr {
        name: lang::Name::new(name.as_bytes()),
        value,
        span: None,
    }
}

/// Checks which arguments a function asks for against what a stage can give.
fn check_arguments(
    function: &Value,
    allowed: &[&str],
    what: &str,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let Value::Lambda(closure) = function else {
        return;
    };
    let ParamIr::Formals { formals, .. } = &closure.lambda.param else {
        return;
    };
    for formal in formals.iter() {
        let name = String::from_utf8_lossy(&formal.name).into_owned();
        if allowed.contains(&name.as_str()) || formal.default.is_some() {
            continue;
        }
        let mut help = match did_you_mean(&name, allowed.iter().copied()) {
            Some(suggestion) => format!("{suggestion} "),
            None => String::new(),
        };
        help.push_str(&if allowed.is_empty() {
            format!("{what} takes no arguments")
        } else {
            format!("{what} can take {}", lang::diagnostic::quoted(allowed))
        });
        // the others' habits are the message's reason (`why_not`)
        if name == "lib"
            && let Some(habit) = nixos_habit(&name)
        {
            help.push_str("; ");
            help.push_str(habit);
        }
        if allowed == ["mesh"] && matches!(name.as_str(), "node" | "settings") {
            help.push_str(&format!(
                "; a field that depends on the node takes `{name}` itself, e.g. `shapes = {{ {name}, ... }}: [ ... ];`"
            ));
        }
        diagnostics.push(
            Diagnostic::error(
                codes::STAGE_ARGUMENT,
                format!(
                    "{what} asks for `{name}`, which it cannot know: {}",
                    why_not(&name)
                ),
            )
            .with_primary(formal.span, "asked for here")
            .with_help(help),
        );
    }
}

/// Evaluates a module file and reads its record. Returns None when the module has
/// errors (they are in `diagnostics`).
pub fn load(
    machine: &mut Machine,
    name: &str,
    location: &ModuleLocation,
    prelude: &Value,
    context: &CheckContext<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Option<Module>> {
    read_module(machine, name, location, prelude, context, diagnostics)
        .map_err(|error| Box::new(with_habit_help(*error)))
}

fn read_module(
    machine: &mut Machine,
    name: &str,
    location: &ModuleLocation,
    prelude: &Value,
    context: &CheckContext<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Option<Module>> {
    let value = match machine.eval_file(&location.path) {
        Ok(value) => value,
        Err(errors) => {
            diagnostics.extend(errors.into_iter().map(with_habit_help));
            return Ok(None);
        }
    };
    let file = machine.sources.find_path(&location.path);
    let span = file
        .and_then(|id| {
            machine
                .sources
                .get(id)
                .map(|f| Span::new(id, 0, f.text.len().min(1)))
        })
        .unwrap_or_default();
    let value = machine.force(&value, span)?;
    let record = match &value {
        Value::Lambda(_) | Value::PrimOp(_) | Value::PrimOpApp(_) => {
            let errors_before = diagnostics.len();
            check_arguments(
                &value,
                &["mesh"],
                &format!("the file of module `{name}`"),
                diagnostics,
            );
            if diagnostics.len() > errors_before {
                return Ok(None);
            }
            let arguments = Value::Attrs(Attrs::from_sorted(vec![attr("mesh", prelude.clone())]));
            machine.call(value.clone(), arguments, span)?
        }
        _ => value.clone(),
    };
    let record = machine.force(&record, span)?;
    let Value::Attrs(record) = record else {
        diagnostics.push(
            Diagnostic::error(codes::INVALID_MODULE, format!("module `{name}` is {}, not a module", record.describe_type()))
                .with_primary(span, "this file")
                .with_help("a module file evaluates to a set of fields, or to a function `{ mesh, ... }: { ... }` returning one"),
        );
        return Ok(None);
    };
    let errors_before = diagnostics.len();
    for entry in record.iter() {
        let field = String::from_utf8_lossy(&entry.name).into_owned();
        let entry_span = entry.span.unwrap_or(span);
        let Some((_, allowed)) = FIELDS.iter().find(|(known, _)| *known == field) else {
            let nixos = nixos_field(&field).map(str::to_string);
            let help = nixos
                .or_else(|| did_you_mean(&field, FIELDS.iter().map(|(f, _)| *f)))
                .unwrap_or_else(|| {
                    format!(
                        "a module has {}",
                        FIELDS
                            .iter()
                            .map(|(f, _)| format!("`{f}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                });
            diagnostics.push(
                Diagnostic::error(
                    codes::UNKNOWN_MODULE_FIELD,
                    format!("module `{name}` has an unknown field `{field}`"),
                )
                .with_primary(entry_span, "not a module field")
                .with_help(help),
            );
            continue;
        };
        let field_value = machine.force(&entry.value.clone(), entry_span)?;
        check_arguments(&field_value, allowed, &format!("`{field}`"), diagnostics);
    }
    let description = match record.get_attr(b"description") {
        Some(entry) => match machine.force(&entry.value.clone(), entry.span.unwrap_or(span))? {
            Value::String(text) => Some(String::from_utf8_lossy(&text).into_owned()),
            other => {
                diagnostics.push(
                    Diagnostic::error(
                        codes::INVALID_MODULE_FIELD,
                        format!(
                            "module `{name}`'s `description` must be a string, not {}",
                            other.describe_type()
                        ),
                    )
                    .with_primary(entry.span.unwrap_or(span), "here")
                    .with_help("describe the module in a sentence"),
                );
                None
            }
        },
        None => None,
    };
    let options = match record.get_attr(b"settings") {
        Some(entry) => read_options(
            machine,
            name,
            &entry.value.clone(),
            entry.span.unwrap_or(span),
            context,
            diagnostics,
        )?,
        None => BTreeMap::new(),
    };
    if diagnostics.len() > errors_before {
        return Ok(None);
    }
    Ok(Some(Module {
        name: name.to_string(),
        location: location.clone(),
        span,
        record,
        description,
        options,
    }))
}

fn read_options(
    machine: &mut Machine,
    module: &str,
    value: &Value,
    span: Span,
    context: &CheckContext<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<BTreeMap<String, OptionDecl>> {
    let value = machine.force(value, span)?;
    let Value::Attrs(declarations) = value else {
        diagnostics.push(
            Diagnostic::error(codes::INVALID_OPTION, format!("module `{module}`'s `settings` must be a set of `mesh.option`s"))
                .with_primary(span, "here")
                .with_help("write `settings = { port = mesh.option { type = mesh.types.port; default = 80; description = \"...\"; }; };`"),
        );
        return Ok(BTreeMap::new());
    };
    let mut options = BTreeMap::new();
    for entry in declarations.iter() {
        let name = String::from_utf8_lossy(&entry.name).into_owned();
        let entry_span = entry.span.unwrap_or(span);
        let declaration = machine.force(&entry.value.clone(), entry_span)?;
        let not_an_option = || {
            Diagnostic::error(codes::INVALID_OPTION, format!("setting `{name}` of module `{module}` is not declared with `mesh.option`"))
                .with_primary(entry_span, "declared here")
                .with_help(format!("write `{name} = mesh.option {{ type = ...; default = ...; description = \"...\"; }};`"))
        };
        let Value::Attrs(attrs) = &declaration else {
            diagnostics.push(not_an_option());
            continue;
        };
        let is_option = match attrs.get(b"_type").cloned() {
            Some(marker) => {
                matches!(machine.force(&marker, entry_span)?, Value::String(s) if &*s == OPTION_MARKER.as_bytes())
            }
            None => false,
        };
        if !is_option {
            diagnostics.push(not_an_option());
            continue;
        }
        let type_value = attrs.get(b"type").cloned().unwrap_or(Value::Null);
        let option_type = match types::read_type(machine, &type_value, entry_span)? {
            Ok(option_type) => option_type,
            Err(problem) => {
                diagnostics.push(
                    Diagnostic::error(
                        codes::INVALID_OPTION,
                        format!("setting `{name}` has an invalid type: {problem}"),
                    )
                    .with_primary(entry_span, "declared here")
                    .with_help("use one of `mesh.types.*`"),
                );
                continue;
            }
        };
        let description = match attrs.get(b"description").cloned() {
            Some(text) => match machine.force(&text, entry_span)? {
                Value::String(text) => String::from_utf8_lossy(&text).into_owned(),
                _ => String::new(),
            },
            None => String::new(),
        };
        let default = attrs
            .get_attr(b"default")
            .map(|d| (d.value.clone(), d.span.unwrap_or(entry_span)));
        if let Some((default_value, default_span)) = &default
            && let Err(mismatch) =
                types::check(machine, &option_type, default_value, *default_span, context)?
        {
            {
                diagnostics.push(
                    Diagnostic::error(
                        codes::DEFAULT_TYPE_MISMATCH,
                        format!(
                            "the default of setting `{module}.{name}{}` is {}, but the setting is {}",
                            mismatch.path, mismatch.found, mismatch.expected
                        ),
                    )
                    .with_primary(mismatch.span.unwrap_or(*default_span), "default given here")
                    .with_secondary(entry_span, format!("declared as `{}` here", option_type.name()))
                    .with_help(format!("give a default that is {}", mismatch.expected)),
                );
                continue;
            }
        }
        options.insert(
            name.clone(),
            OptionDecl {
                name,
                option_type,
                default: default.map(|(value, _)| value),
                description,
                span: entry_span,
            },
        );
    }
    Ok(options)
}

/// The value of a module field for one node: a plain value as is, a function
/// called with the arguments it asks for (all of `arguments` if it takes `...`).
pub fn field_value(
    machine: &mut Machine,
    module: &Module,
    field: &str,
    arguments: &[(&'static str, Value)],
) -> EvalResult<Option<Value>> {
    let Some(entry) = module.record.get_attr(field.as_bytes()) else {
        return Ok(None);
    };
    let span = entry.span.unwrap_or(module.span);
    let value = machine.force(&entry.value.clone(), span)?;
    call_with(machine, value, arguments, span).map(Some)
}

/// `value` called with those of `arguments` its formals name (all of them for a
/// function with `...` or without formals); `value` itself when it is no function.
pub fn call_with(
    machine: &mut Machine,
    value: Value,
    arguments: &[(&'static str, Value)],
    span: Span,
) -> EvalResult<Value> {
    let wanted: Vec<&(&'static str, Value)> = match &value {
        Value::Lambda(closure) => match &closure.lambda.param {
            ParamIr::Formals {
                formals,
                ellipsis: false,
                ..
            } => arguments
                .iter()
                .filter(|(name, _)| formals.iter().any(|f| &*f.name == name.as_bytes()))
                .collect(),
            _ => arguments.iter().collect(),
        },
        Value::PrimOp(_) | Value::PrimOpApp(_) => arguments.iter().collect(),
        _ => return Ok(value),
    };
    let argument_set = Value::Attrs(Attrs::from_unsorted(
        wanted
            .into_iter()
            .map(|(name, value)| Attr {
                name: lang::Name::of(name),
                value: value.clone(),
                span: None,
            })
            .collect(),
    ));
    let result = machine.call(value, argument_set, span)?;
    machine.force(&result, span)
}

/// What the repository's layout says about its modules: directories whose names are
/// not identifiers (E112) and repository modules shadowing standard ones (E108).
pub fn layout_diagnostics(
    repository: &Repository,
    modules: &BTreeMap<String, Module>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    for name in &repository.refused {
        diagnostics.push(
            Diagnostic::error(
                codes::MODULE_NAME_NOT_IDENTIFIER,
                format!(
                    "the module directory `modules/{}` is not an identifier: {}; it is left out",
                    plan::display::escaped(name),
                    crate::names::why_not_identifier(name)
                ),
            )
            .with_help("rename the directory: module names use ASCII letters, digits, `_` and `-`, starting with a letter or `_`, because they become parts of paths under `secrets/`"),
        );
    }
    for name in &repository.shadowed {
        if let Some(module) = modules.get(name)
            && module.location.origin == Origin::Repository
        {
            {
                diagnostics.push(
                    Diagnostic::note(
                        codes::SHADOWED_MODULE,
                        format!(
                            "module `{name}` of the repository shadows the standard module `{name}`"
                        ),
                    )
                    .with_primary(module.span, "this module is used instead")
                    .with_help(format!(
                        "rename it if you meant to use the standard `{name}` as well"
                    )),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn missing(path: &str, help: &str) -> Diagnostic {
        Diagnostic::error(
            codes::MISSING_ATTRIBUTE,
            format!("attribute `{path}` missing"),
        )
        .with_help(help)
    }

    /// nixpkgs' module-system names get mesh's answer when selected from `lib`, or
    /// when they are `mk...` names; a set of the user's own that lacks `types`
    /// keeps the language's help (a did-you-mean), which was replaced.
    #[test]
    fn module_system_help_is_for_lib_and_mk_names_only() {
        let helped = with_habit_help(missing("lib.mkIf", "use `or` to give a default"));
        assert!(
            helped
                .help
                .is_some_and(|help| help.contains("optionalAttrs"))
        );
        let helped = with_habit_help(missing("mkDefault", "use `or` to give a default"));
        assert!(
            helped
                .help
                .is_some_and(|help| help.contains("no priorities"))
        );
        let helped = with_habit_help(missing("lib.types", "use `or` to give a default"));
        assert!(helped.help.is_some_and(|help| help.contains("mesh.types")));
        let kept = with_habit_help(missing("types", "did you mean `type`?"));
        assert_eq!(kept.help.as_deref(), Some("did you mean `type`?"));
        let kept = with_habit_help(missing("settings.types", "did you mean `type`?"));
        assert_eq!(kept.help.as_deref(), Some("did you mean `type`?"));
    }
}
