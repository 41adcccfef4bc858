//! The builtins: the global names every file sees and the `builtins` set. Features
//! the mesh language leaves out (derivations, fetchers, the store, the environment,
//! the clock) are present by name and refuse with a diagnostic when used, so a
//! program that reaches for one is told why rather than that the name is unknown.

mod attrs;
mod formats;
mod json;
mod lists;
mod newer;
mod posix_regex;
pub(crate) mod regex;
mod stable_sort;
mod strings;
mod toml_1_1;
mod versions;

pub(crate) use lists::collect_list;

use std::collections::HashMap;
use std::rc::Rc;

use crate::codes;
use crate::compile;
use crate::eval::{Globals, Machine, error, type_error};
use crate::span::Span;
use crate::value::{
    Attr, Attrs, Bytes, EvalResult, List, PrimFn, PrimFunction, PrimOp, Thunk, Value,
};

/// A builtin's name, arity and function.
pub(crate) struct Builtin {
    pub name: &'static str,
    pub arity: usize,
    pub function: PrimFn,
}

/// What Nix 2.8 reports as `builtins.langVersion`.
pub const LANG_VERSION: i64 = 6;
/// What `builtins.nixVersion` reports: the Nix the language follows.
pub const NIX_VERSION: &str = "2.8.0";

/// Names that are global without the `__` prefix, as in Nix.
const UNPREFIXED: &[&str] = &[
    "abort",
    "baseNameOf",
    "derivation",
    "derivationStrict",
    "dirOf",
    "fetchGit",
    "fetchMercurial",
    "fetchTarball",
    "fetchTree",
    "import",
    "fromTOML",
    "isNull",
    "map",
    "placeholder",
    "removeAttrs",
    "scopedImport",
    "throw",
    "toString",
];

/// Builtin functions of Nix the mesh language leaves out, with the reason.
const REFUSED_FUNCTIONS: &[(&str, usize, &str)] = &[
    ("appendContext", 2, "string context"),
    ("derivation", 1, "derivations"),
    ("derivationStrict", 1, "derivations"),
    ("fetchGit", 1, "fetchers"),
    ("fetchMercurial", 1, "fetchers"),
    ("fetchTarball", 1, "fetchers"),
    ("fetchTree", 1, "fetchers"),
    ("fetchurl", 1, "fetchers"),
    ("filterSource", 2, "store"),
    ("findFile", 2, "search paths"),
    ("getContext", 1, "string context"),
    ("getEnv", 1, "environment (`getEnv`)"),
    ("hasContext", 1, "string context"),
    ("path", 1, "store"),
    ("placeholder", 1, "placeholders"),
    ("scopedImport", 2, "`scopedImport`"),
    ("storePath", 1, "store"),
    ("toFile", 2, "store (`toFile`)"),
    ("unsafeDiscardOutputDependency", 1, "string context"),
];

/// Builtin constants the mesh language leaves out.
const REFUSED_CONSTANTS: &[(&str, &str)] = &[
    ("currentSystem", "`currentSystem`"),
    ("currentTime", "clock (`currentTime`)"),
    ("nixPath", "search paths (`nixPath`)"),
    ("storeDir", "store (`storeDir`)"),
];

fn refused(name: &str, what: &str, span: Span) -> Box<crate::diagnostic::Diagnostic> {
    error(
        codes::UNSUPPORTED_FEATURE,
        format!("`builtins.{name}` is not part of the mesh language"),
        span,
        "used here",
        format!(
            "mesh evaluation is pure: it has no {what}; a module describes files, services and containers with `mesh.*` shapes instead"
        ),
    )
}

/// A builtin that refuses, naming the feature it belongs to.
fn refusal(name: &'static str, arity: usize, what: &'static str) -> Value {
    Value::PrimOp(Rc::new(PrimOp {
        name,
        arity,
        function: PrimFunction::Host(Rc::new(move |_machine, _arguments, span| {
            Err(refused(name, what, span))
        })),
    }))
}

fn all_builtins() -> Vec<Builtin> {
    let mut list = vec![
        Builtin {
            name: "abort",
            arity: 1,
            function: abort,
        },
        Builtin {
            name: "add",
            arity: 2,
            function: add,
        },
        Builtin {
            name: "addErrorContext",
            arity: 2,
            function: add_error_context,
        },
        Builtin {
            name: "baseNameOf",
            arity: 1,
            function: base_name_of,
        },
        Builtin {
            name: "bitAnd",
            arity: 2,
            function: bit_and,
        },
        Builtin {
            name: "bitOr",
            arity: 2,
            function: bit_or,
        },
        Builtin {
            name: "bitXor",
            arity: 2,
            function: bit_xor,
        },
        Builtin {
            name: "ceil",
            arity: 1,
            function: ceil,
        },
        Builtin {
            name: "deepSeq",
            arity: 2,
            function: deep_seq,
        },
        Builtin {
            name: "dirOf",
            arity: 1,
            function: dir_of,
        },
        Builtin {
            name: "div",
            arity: 2,
            function: div,
        },
        Builtin {
            name: "floor",
            arity: 1,
            function: floor,
        },
        Builtin {
            name: "functionArgs",
            arity: 1,
            function: function_args,
        },
        Builtin {
            name: "hashFile",
            arity: 2,
            function: hash_file,
        },
        Builtin {
            name: "import",
            arity: 1,
            function: import,
        },
        Builtin {
            name: "isAttrs",
            arity: 1,
            function: is_attrs,
        },
        Builtin {
            name: "isBool",
            arity: 1,
            function: is_bool,
        },
        Builtin {
            name: "isFloat",
            arity: 1,
            function: is_float,
        },
        Builtin {
            name: "isFunction",
            arity: 1,
            function: is_function,
        },
        Builtin {
            name: "isInt",
            arity: 1,
            function: is_int,
        },
        Builtin {
            name: "isList",
            arity: 1,
            function: is_list,
        },
        Builtin {
            name: "isNull",
            arity: 1,
            function: is_null,
        },
        Builtin {
            name: "isPath",
            arity: 1,
            function: is_path,
        },
        Builtin {
            name: "isString",
            arity: 1,
            function: is_string,
        },
        Builtin {
            name: "lessThan",
            arity: 2,
            function: less_than,
        },
        Builtin {
            name: "mul",
            arity: 2,
            function: mul,
        },
        Builtin {
            name: "pathExists",
            arity: 1,
            function: path_exists,
        },
        Builtin {
            name: "readDir",
            arity: 1,
            function: read_dir,
        },
        Builtin {
            name: "readFile",
            arity: 1,
            function: read_file,
        },
        Builtin {
            name: "seq",
            arity: 2,
            function: seq,
        },
        Builtin {
            name: "sub",
            arity: 2,
            function: sub,
        },
        Builtin {
            name: "throw",
            arity: 1,
            function: throw,
        },
        Builtin {
            name: "toPath",
            arity: 1,
            function: to_path,
        },
        Builtin {
            name: "trace",
            arity: 2,
            function: trace,
        },
        Builtin {
            name: "tryEval",
            arity: 1,
            function: try_eval,
        },
        Builtin {
            name: "typeOf",
            arity: 1,
            function: type_of,
        },
        Builtin {
            name: "unsafeDiscardStringContext",
            arity: 1,
            function: discard_context,
        },
        Builtin {
            name: "unsafeGetAttrPos",
            arity: 2,
            function: unsafe_get_attr_pos,
        },
    ];
    list.extend(attrs::builtins());
    list.extend(lists::builtins());
    list.extend(strings::builtins());
    list.extend(json::builtins());
    list.extend(regex::builtins());
    list.extend(versions::builtins());
    list.extend(formats::builtins());
    list.extend(newer::builtins());
    list
}

fn primop(name: &'static str, arity: usize, function: PrimFn) -> Value {
    Value::PrimOp(Rc::new(PrimOp {
        name,
        arity,
        function: PrimFunction::Builtin(function),
    }))
}

/// Builds the global scope: `builtins`, the unprefixed names and the `__` forms.
pub(crate) fn globals() -> Globals {
    let mut members: Vec<(&'static str, Value)> = Vec::new();
    for builtin in all_builtins() {
        members.push((
            builtin.name,
            primop(builtin.name, builtin.arity, builtin.function),
        ));
    }
    for (name, arity, what) in REFUSED_FUNCTIONS {
        members.push((name, refusal(name, *arity, what)));
    }
    for (name, what) in REFUSED_CONSTANTS {
        let failing = refusal(name, 0, what);
        members.push((name, Thunk::apply(failing, Vec::new(), Span::default())));
    }
    members.push(("true", Value::Bool(true)));
    members.push(("false", Value::Bool(false)));
    members.push(("null", Value::Null));
    members.push(("langVersion", Value::Int(LANG_VERSION)));
    members.push(("nixVersion", Value::string_from(NIX_VERSION)));

    // `builtins.builtins` is `builtins` itself: tie the knot with a thunk
    let knot = Rc::new(Thunk {
        state: std::cell::RefCell::new(crate::value::ThunkState::Blackhole),
    });
    let mut entries: Vec<Attr> = members
        .iter()
        .map(|(name, value)| Attr {
            name: crate::name::Name::new(name.as_bytes()),
            value: value.clone(),
            span: None,
        })
        .collect();
    entries.push(Attr {
        name: crate::name::Name::of("builtins"),
        value: Value::Thunk(knot.clone()),
        span: None,
    });
    let builtins_value = Value::Attrs(Attrs::from_unsorted(entries));
    *knot.state.borrow_mut() = crate::value::ThunkState::Done(builtins_value.clone());

    let mut names: HashMap<Bytes, Value> = HashMap::new();
    for (name, value) in &members {
        let mut prefixed = b"__".to_vec();
        prefixed.extend_from_slice(name.as_bytes());
        // as in Nix 2.8, a name global without the prefix has no `__` form
        // (`__map`, `__toString` and `__fromTOML` are undefined there)
        if !matches!(*name, "true" | "false" | "null") && !UNPREFIXED.contains(name) {
            names.insert(Bytes::from(prefixed), value.clone());
        }
        if UNPREFIXED.contains(name) || matches!(*name, "true" | "false" | "null") {
            names.insert(Bytes::from(name.as_bytes()), value.clone());
        }
    }
    names.insert(Bytes::from(&b"builtins"[..]), builtins_value);
    Globals::new(names)
}

// ---- helpers the builtins share --------------------------------------------

impl Machine {
    pub(crate) fn force_int(
        &mut self,
        value: &Value,
        span: Span,
        context: &str,
    ) -> EvalResult<i64> {
        match self.force(value, span)? {
            Value::Int(number) => Ok(number),
            other => Err(type_error("an integer", &other, span, context)),
        }
    }

    pub(crate) fn force_number(
        &mut self,
        value: &Value,
        span: Span,
        context: &str,
    ) -> EvalResult<Value> {
        match self.force(value, span)? {
            number @ (Value::Int(_) | Value::Float(_)) => Ok(number),
            other => Err(type_error("a number", &other, span, context)),
        }
    }

    pub(crate) fn force_bool(
        &mut self,
        value: &Value,
        span: Span,
        context: &str,
    ) -> EvalResult<bool> {
        match self.force(value, span)? {
            Value::Bool(boolean) => Ok(boolean),
            other => Err(type_error("a Boolean", &other, span, context)),
        }
    }

    pub(crate) fn force_string(
        &mut self,
        value: &Value,
        span: Span,
        context: &str,
    ) -> EvalResult<Bytes> {
        match self.force(value, span)? {
            Value::String(bytes) => Ok(bytes),
            other => Err(type_error("a string", &other, span, context)),
        }
    }

    pub(crate) fn force_list(
        &mut self,
        value: &Value,
        span: Span,
        context: &str,
    ) -> EvalResult<List> {
        match self.force(value, span)? {
            Value::List(list) => Ok(list),
            other => Err(type_error("a list", &other, span, context)),
        }
    }

    pub(crate) fn force_attrs(
        &mut self,
        value: &Value,
        span: Span,
        context: &str,
    ) -> EvalResult<Attrs> {
        match self.force(value, span)? {
            Value::Attrs(attrs) => Ok(attrs),
            other => Err(type_error("a set", &other, span, context)),
        }
    }

    /// Nix's `forceFunction`: a function or a set with `__functor`.
    pub(crate) fn force_function(
        &mut self,
        value: &Value,
        span: Span,
        context: &str,
    ) -> EvalResult<Value> {
        match self.force(value, span)? {
            function if function.is_function() => Ok(function),
            Value::Attrs(attrs) if attrs.contains(b"__functor") => Ok(Value::Attrs(attrs)),
            other => Err(type_error("a function", &other, span, context)),
        }
    }

    /// Calls `function` with two arguments.
    pub(crate) fn call2(
        &mut self,
        function: &Value,
        first: Value,
        second: Value,
        span: Span,
    ) -> EvalResult<Value> {
        self.call_curried(function, first, second, span)
    }

    /// Nix's `coerceToPath`: a path, or a string holding an absolute path.
    pub(crate) fn coerce_to_path(
        &mut self,
        value: &Value,
        span: Span,
        context: &str,
    ) -> EvalResult<Vec<u8>> {
        self.coerce_to_path_as_written(value, span, context)
            .map(|(path, _)| path)
    }

    /// The canonical path and the text it was written as.
    fn coerce_to_path_as_written(
        &mut self,
        value: &Value,
        span: Span,
        context: &str,
    ) -> EvalResult<(Vec<u8>, Vec<u8>)> {
        let text = self.coerce_to_string(value, span, false, false)?;
        if text.first() != Some(&b'/') {
            return Err(error(
                codes::INVALID_ARGUMENT,
                format!(
                    "{context}: `{}` is not an absolute path",
                    String::from_utf8_lossy(&text)
                ),
                span,
                "expected a path here",
                "use a path literal such as `./file.nix`",
            ));
        }
        Ok((compile::canonical_path(&text), text))
    }

    /// [`Machine::coerce_to_path`] for a file to read: a string that the operating
    /// system would not resolve (`"file/"`, `"missing/.."`) cannot be read.
    pub(crate) fn coerce_to_readable_path(
        &mut self,
        value: &Value,
        span: Span,
        context: &str,
    ) -> EvalResult<Vec<u8>> {
        let (path, written) = self.coerce_to_path_as_written(value, span, context)?;
        if self.is_allowed(&path) && !self.raw_path_resolves(&written) {
            return Err(error(
                codes::FILE_UNREADABLE,
                format!(
                    "{context}: cannot read `{}`: a `/`, `.` or `..` in it follows something that is not a directory",
                    String::from_utf8_lossy(&written)
                ),
                span,
                "read here",
                "check the path; a path literal (`./dir/file`) is always resolved within the repository",
            ));
        }
        Ok(path)
    }
}

fn bool_value(value: bool) -> EvalResult<Value> {
    Ok(Value::Bool(value))
}

// ---- control ----------------------------------------------------------------

fn abort(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let message = machine.coerce_to_string(&arguments[0], span, false, false)?;
    Err(error(
        codes::ABORTED,
        format!("evaluation aborted: {}", String::from_utf8_lossy(&message)),
        span,
        "aborted here",
        "`abort` stops evaluation on purpose; the message says why",
    ))
}

fn throw(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let message = machine.coerce_to_string(&arguments[0], span, false, false)?;
    Err(error(
        codes::THROWN,
        String::from_utf8_lossy(&message).into_owned(),
        span,
        "thrown here",
        "`throw` reports an error on purpose; the message says why (`builtins.tryEval` can catch it)",
    ))
}

/// Evaluates the second argument; if that fails, the first (a message) joins the
/// error's trace, as `--show-trace` shows it in Nix.
fn add_error_context(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    // as Nix: the context is made a string only when the value fails, and a
    // context that is none is that error instead (one `tryEval` does not catch);
    // but a limit reached (steps, memory, depth) stays what it is, as the editor
    // and the build tell a cut-short evaluation by it
    machine.force(&arguments[1], span).map_err(|mut error| {
        if [
            codes::BUDGET_EXCEEDED,
            codes::MEMORY_EXCEEDED,
            codes::TOO_DEEP,
        ]
        .contains(&error.code)
        {
            return error;
        }
        match machine.coerce_to_string(&arguments[0], span, false, false) {
            Ok(message) => {
                if error.trace.len() < 64 {
                    error.trace.push(crate::diagnostic::Label::new(
                        span,
                        String::from_utf8_lossy(&message).into_owned(),
                    ));
                }
                error
            }
            Err(coercion) => coercion,
        }
    })
}

fn seq(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    machine.force(&arguments[0], span)?;
    machine.force(&arguments[1], span)
}

fn deep_seq(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    machine.force_deep(&arguments[0], span)?;
    machine.force(&arguments[1], span)
}

/// What `builtins.trace` or `builtins.warn` said and where it was called.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Traced {
    pub kind: TraceKind,
    pub message: String,
    /// The call of `trace` or `warn`.
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TraceKind {
    /// `builtins.trace`: Nix prints it as `trace: MESSAGE`.
    Trace,
    /// `builtins.warn`: Nix prints it as `evaluation warning: MESSAGE`.
    Warning,
}

impl TraceKind {
    /// The prefix Nix prints before the message.
    pub fn prefix(self) -> &'static str {
        match self {
            TraceKind::Trace => "trace",
            TraceKind::Warning => "evaluation warning",
        }
    }
}

fn trace(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let message = machine.force(&arguments[0], span)?;
    let text = match &message {
        Value::String(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        other => {
            // what printing refuses (a secret) is said where the trace is, not at
            // a place printing does not know
            let printed = machine.print_strict(other).map_err(|mut error| {
                if let Some(label) = &mut error.primary
                    && label.span == Span::default()
                {
                    label.span = span;
                }
                error
            })?;
            String::from_utf8_lossy(&printed).into_owned()
        }
    };
    machine.traces.push(Traced {
        kind: TraceKind::Trace,
        message: text,
        span,
    });
    machine.force(&arguments[1], span)
}

fn try_eval(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let (success, value) = match machine.force(&arguments[0], span) {
        Ok(_) => (true, arguments[0].clone()),
        Err(error) if error.code == codes::THROWN || error.code == codes::ASSERTION_FAILED => {
            (false, Value::Bool(false))
        }
        Err(error) => return Err(error),
    };
    Ok(Value::Attrs(Attrs::from_sorted(vec![
        Attr {
            name: crate::name::Name::of("success"),
            value: Value::Bool(success),
            span: None,
        },
        Attr {
            name: crate::name::Name::of("value"),
            value,
            span: None,
        },
    ])))
}

fn import(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let path = machine.coerce_to_readable_path(&arguments[0], span, "import")?;
    machine.import_path(&path, span)
}

// ---- types ------------------------------------------------------------------

fn type_of(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let value = machine.force(&arguments[0], span)?;
    if let Value::Opaque(_) = value {
        return Err(crate::eval::opaque_error(span));
    }
    Ok(Value::string_from(value.type_name()))
}

fn is_attrs(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    bool_value(matches!(
        machine.force(&arguments[0], span)?,
        Value::Attrs(_)
    ))
}

fn is_bool(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    bool_value(matches!(
        machine.force(&arguments[0], span)?,
        Value::Bool(_)
    ))
}

fn is_float(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    bool_value(matches!(
        machine.force(&arguments[0], span)?,
        Value::Float(_)
    ))
}

fn is_function(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    bool_value(machine.force(&arguments[0], span)?.is_function())
}

fn is_int(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    bool_value(matches!(machine.force(&arguments[0], span)?, Value::Int(_)))
}

fn is_list(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    bool_value(matches!(
        machine.force(&arguments[0], span)?,
        Value::List(_)
    ))
}

fn is_null(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    bool_value(matches!(machine.force(&arguments[0], span)?, Value::Null))
}

fn is_path(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    bool_value(matches!(
        machine.force(&arguments[0], span)?,
        Value::Path(_)
    ))
}

fn is_string(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    bool_value(matches!(
        machine.force(&arguments[0], span)?,
        Value::String(_)
    ))
}

fn function_args(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let function = machine.force(&arguments[0], span)?;
    match function {
        Value::Lambda(closure) => match &closure.lambda.param {
            compile::ParamIr::Identifier => Ok(Value::Attrs(Attrs::new())),
            compile::ParamIr::Formals { formals, .. } => Ok(Value::Attrs(Attrs::from_unsorted(
                formals
                    .iter()
                    .map(|formal| Attr {
                        name: formal.name,
                        value: Value::Bool(formal.default.is_some()),
                        span: Some(formal.span),
                    })
                    .collect(),
            ))),
        },
        Value::PrimOp(_) | Value::PrimOpApp(_) => Ok(Value::Attrs(Attrs::new())),
        other => Err(type_error("a function", &other, span, "`functionArgs`")),
    }
}

// ---- numbers ----------------------------------------------------------------

fn arithmetic(
    machine: &mut Machine,
    arguments: &[Value],
    span: Span,
    op: compile::Operator,
) -> EvalResult<Value> {
    let left = machine.force(&arguments[0], span)?;
    let right = machine.force(&arguments[1], span)?;
    machine.binary_values(op, left, right, span, span, span)
}

fn add(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let left = machine.force_number(&arguments[0], span, "`add`")?;
    let right = machine.force_number(&arguments[1], span, "`add`")?;
    machine.binary_values(compile::Operator::Add, left, right, span, span, span)
}

fn sub(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    arithmetic(machine, arguments, span, compile::Operator::Subtract)
}

fn mul(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    arithmetic(machine, arguments, span, compile::Operator::Multiply)
}

fn div(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    arithmetic(machine, arguments, span, compile::Operator::Divide)
}

fn less_than(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    Ok(Value::Bool(machine.less_than(
        &arguments[0],
        &arguments[1],
        span,
    )?))
}

fn bitwise(
    machine: &mut Machine,
    arguments: &[Value],
    span: Span,
    op: fn(i64, i64) -> i64,
    name: &str,
) -> EvalResult<Value> {
    let left = machine.force_int(&arguments[0], span, name)?;
    let right = machine.force_int(&arguments[1], span, name)?;
    Ok(Value::Int(op(left, right)))
}

fn bit_and(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    bitwise(machine, arguments, span, |a, b| a & b, "`bitAnd`")
}

fn bit_or(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    bitwise(machine, arguments, span, |a, b| a | b, "`bitOr`")
}

fn bit_xor(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    bitwise(machine, arguments, span, |a, b| a ^ b, "`bitXor`")
}

fn round(
    machine: &mut Machine,
    arguments: &[Value],
    span: Span,
    op: fn(f64) -> f64,
    name: &str,
) -> EvalResult<Value> {
    let number = machine.force_number(&arguments[0], span, name)?;
    let rounded = op(crate::eval::as_float(&number));
    if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&rounded) {
        return Err(error(
            codes::INTEGER_OVERFLOW,
            format!(
                "{name}: {} does not fit in an integer",
                crate::print::format_float(rounded)
            ),
            span,
            "rounded here",
            "integers are 64-bit signed",
        ));
    }
    Ok(Value::Int(rounded as i64))
}

fn ceil(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    round(machine, arguments, span, f64::ceil, "`ceil`")
}

fn floor(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    round(machine, arguments, span, f64::floor, "`floor`")
}

// ---- paths and files ----------------------------------------------------------

fn base_name_of(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let path = machine.coerce_to_string(&arguments[0], span, false, false)?;
    if path.is_empty() {
        return Ok(Value::string(b""));
    }
    let mut last = path.len() - 1;
    if path[last] == b'/' && last > 0 {
        last -= 1;
    }
    let start = path[..=last]
        .iter()
        .rposition(|b| *b == b'/')
        .map(|p| p + 1)
        .unwrap_or(0);
    Ok(Value::string(&path[start..=last]))
}

fn dir_of(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let value = machine.force(&arguments[0], span)?;
    let path = machine.coerce_to_string(&value, span, false, false)?;
    let directory: Vec<u8> = match path.iter().rposition(|b| *b == b'/') {
        None => b".".to_vec(),
        Some(0) => b"/".to_vec(),
        Some(position) => path[..position].to_vec(),
    };
    match value {
        Value::Path(_) => Ok(Value::Path(Bytes::from(directory))),
        _ => Ok(Value::String(Bytes::from(directory))),
    }
}

fn to_path(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let path = machine.coerce_to_path(&arguments[0], span, "`toPath`")?;
    Ok(Value::String(Bytes::from(path)))
}

fn path_exists(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let (path, written) = machine.coerce_to_path_as_written(&arguments[0], span, "`pathExists`")?;
    let file_path = machine.check_allowed(&path, span, "`pathExists`")?;
    Ok(Value::Bool(
        machine.loader().kind(&file_path).is_some() && machine.raw_path_resolves(&written),
    ))
}

fn read_file(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let path = machine.coerce_to_readable_path(&arguments[0], span, "`readFile`")?;
    let content = machine.read_file(&path, span, "`readFile`")?;
    Ok(Value::String(Bytes::from(content)))
}

fn read_dir(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let path = machine.coerce_to_readable_path(&arguments[0], span, "`readDir`")?;
    let directory = machine.check_allowed(&path, span, "`readDir`")?;
    let entries = machine.loader().list(&directory).map_err(|io_error| {
        error(
            codes::FILE_UNREADABLE,
            format!(
                "cannot read directory `{}`: {io_error}",
                directory.display()
            ),
            span,
            "read here",
            "check that the directory exists",
        )
    })?;
    Ok(Value::Attrs(Attrs::from_unsorted(
        entries
            .into_iter()
            .map(|(name, kind)| Attr {
                name: crate::name::Name::new(&name),
                value: Value::string_from(kind.nix_name()),
                span: None,
            })
            .collect(),
    )))
}

fn hash_file(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let algorithm = machine.force_string(&arguments[0], span, "`hashFile`")?;
    let path = machine.coerce_to_readable_path(&arguments[1], span, "`hashFile`")?;
    let content = machine.read_file_bounded(&path, span, "`hashFile`")?;
    strings::hash_bytes(&algorithm, &content, span)
}

fn discard_context(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let text = machine.coerce_to_string(&arguments[0], span, false, false)?;
    Ok(Value::String(Bytes::from(text)))
}

fn unsafe_get_attr_pos(
    machine: &mut Machine,
    arguments: &[Value],
    span: Span,
) -> EvalResult<Value> {
    let name = machine.force_string(&arguments[0], span, "`unsafeGetAttrPos`")?;
    let attrs = machine.force_attrs(&arguments[1], span, "`unsafeGetAttrPos`")?;
    let Some(attr_span) = attrs.get_attr(&name).and_then(|attr| attr.span) else {
        return Ok(Value::Null);
    };
    Ok(machine.position_value(attr_span))
}

impl Machine {
    /// `name` as positions name the file (see [`Machine::with_position_names`]).
    fn position_name(&self, name: &str) -> String {
        self.position_names
            .iter()
            .find_map(|(prefix, replacement)| {
                name.strip_prefix(prefix.as_str())
                    .map(|rest| format!("{replacement}{rest}"))
            })
            .unwrap_or_else(|| name.to_string())
    }

    /// `{ column; file; line; }` for a source position (`unsafeGetAttrPos`,
    /// `__curPos`), or null if the position is in no known file.
    pub(crate) fn position_value(&self, span: Span) -> Value {
        let Some(file) = self.sources.get(span.file).cloned() else {
            return Value::Null;
        };
        let (line, column) = file.line_column(span.start);
        Value::Attrs(Attrs::from_sorted(vec![
            Attr {
                name: crate::name::Name::of("column"),
                value: Value::Int(column as i64),
                span: None,
            },
            Attr {
                name: crate::name::Name::of("file"),
                value: Value::string_from(&self.position_name(&file.name)),
                span: None,
            },
            Attr {
                name: crate::name::Name::of("line"),
                value: Value::Int(line as i64),
                span: None,
            },
        ]))
    }
}
