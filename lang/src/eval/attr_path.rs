//! `-A PATH` of `meshc eval`, as `nix-instantiate -A` selects: the names of a
//! path (`a.b."c.d".0`) taken one at a time, a number indexing a list, and a
//! function met on the way called with its defaults (Nix's `autoCallFunction`
//! without `--arg`). Nothing here has a source span: the path comes from the
//! command line, so its errors name the path instead.

use super::*;
use crate::codes;
use crate::compile::ParamIr;
use crate::diagnostic::{Diagnostic, did_you_mean};
use crate::value::{Attrs, EvalResult, Value};

/// An attribute path's names, split at the dots outside `"` quotes (the quotes
/// are dropped, as in Nix: `a."b.c"` is two names). An empty path is no names;
/// an empty name (`a..b`, `a.`) is an error, said as the reason.
pub fn parse_attr_path(path: &str) -> Result<Vec<String>, String> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let mut names = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for character in path.chars() {
        match character {
            '"' => quoted = !quoted,
            '.' if !quoted => names.push(std::mem::take(&mut current)),
            other => current.push(other),
        }
    }
    if quoted {
        return Err(format!("the quote in `{path}` is not closed"));
    }
    names.push(current);
    if names.iter().any(String::is_empty) {
        return Err(format!(
            "`{path}` has an empty name (two dots together, or a dot at an end)"
        ));
    }
    Ok(names)
}

impl Machine {
    /// The value at `names` below `value`, each step forced (see the module's
    /// doc), a function met on the way called with `arguments` (`--arg`,
    /// `--argstr`) and its defaults; `path` is the path as written, for the errors.
    /// With arguments, the value found is called too, as `nix-instantiate` does.
    pub fn select_attr_path(
        &mut self,
        value: Value,
        names: &[String],
        path: &str,
        arguments: &Attrs,
    ) -> EvalResult<Value> {
        let span = Span::default();
        let mut current = value;
        for (index, name) in names.iter().enumerate() {
            let called = self.call_with_defaults(current, &names[..index], path, arguments)?;
            let forced = self.force(&called, span)?;
            let here = || match index {
                0 => "the whole value".to_string(),
                _ => format!("`{}`", names[..index].join(".")),
            };
            // a number is a list index, never a name (as in Nix, quoted or not)
            current = match (name.parse::<usize>(), &forced) {
                (Ok(position), Value::List(items)) => match items.get(position) {
                    Some(item) => item.clone(),
                    None => {
                        return Err(Box::new(
                            Diagnostic::error(
                                codes::INDEX_OUT_OF_BOUNDS,
                                format!(
                                    "`-A {path}`: {} is a list of {} elements, without index {position}",
                                    here(),
                                    items.len()
                                ),
                            )
                            .with_help("list indices of a path start at 0"),
                        ));
                    }
                },
                (Err(_), Value::Attrs(attrs)) => match attrs.get(name.as_bytes()) {
                    Some(item) => item.clone(),
                    None => return Err(missing(attrs, name, &here(), path)),
                },
                _ => {
                    let wanted = match name.parse::<usize>() {
                        Ok(_) => "a list (a number in a path indexes a list)",
                        Err(_) => "a set",
                    };
                    return Err(Box::new(
                        Diagnostic::error(
                            codes::TYPE_MISMATCH,
                            format!(
                                "`-A {path}`: {} is {}, not {wanted}",
                                here(),
                                forced.describe_type()
                            ),
                        )
                        .with_help(format!(
                            "select only as far as {}: `-A` goes into sets by name and lists by number",
                            here()
                        )),
                    ));
                }
            };
        }
        if arguments.is_empty() {
            return Ok(current);
        }
        self.call_with_defaults(current, names, path, arguments)
    }

    /// `value` called when it is a function of formal arguments (`{ pkgs ? ...,
    /// ... }:`, a file's usual head), as Nix's `autoCallFunction` calls it: with
    /// the `arguments` it names (all of them when it has `...`), its defaults
    /// giving the rest; any other value as it is. A formal without a default that
    /// no argument gives is E023.
    fn call_with_defaults(
        &mut self,
        value: Value,
        before: &[String],
        path: &str,
        arguments: &Attrs,
    ) -> EvalResult<Value> {
        let mut forced = self.force(&value, Span::default())?;
        // a set with `__functor` is called as Nix's `autoCallFunction` calls it: the
        // functor given the set, and what that gives called in turn; each call is a
        // level of nesting, so a functor giving its own set ends in E028 (Nix: a
        // stack overflow), not in the step budget
        let mut levels = 0;
        let called = loop {
            let Value::Attrs(attrs) = &forced else {
                break Ok(());
            };
            let Some(functor) = attrs.get_attr(b"__functor") else {
                break Ok(());
            };
            let (functor, span) = (functor.value.clone(), functor.span.unwrap_or_default());
            if let Err(error) = self.enter(span) {
                break Err(error);
            }
            levels += 1;
            match self
                .call(functor, forced.clone(), span)
                .and_then(|called| self.force(&called, span))
            {
                Ok(called) => forced = called,
                Err(error) => break Err(error),
            }
        };
        for _ in 0..levels {
            self.leave();
        }
        called?;
        let Value::Lambda(closure) = &forced else {
            return Ok(forced);
        };
        // the call is said at the function (the path has no place in a file)
        let span = closure.lambda.span;
        let ParamIr::Formals {
            formals, ellipsis, ..
        } = &closure.lambda.param
        else {
            return Ok(forced);
        };
        if let Some(formal) = formals
            .iter()
            .find(|formal| formal.default.is_none() && !arguments.contains(formal.name))
        {
            let at = match before {
                [] => "the whole value".to_string(),
                _ => format!("`{}`", before.join(".")),
            };
            return Err(Box::new(
                Diagnostic::error(
                    codes::MISSING_ARGUMENT,
                    format!(
                        "{}{at} is a function whose argument `{}` has no default and is not given",
                        lead(path),
                        String::from_utf8_lossy(&formal.name)
                    ),
                )
                .with_primary(formal.span, "this argument has no default")
                .with_help(format!(
                    "give it with `--arg {name} EXPR` (or `--argstr {name} TEXT`): a function met \
                     on the way is called with those and its defaults, as `nix-instantiate` calls it",
                    name = String::from_utf8_lossy(&formal.name)
                )),
            ));
        }
        let given = match ellipsis {
            true => arguments.clone(),
            false => Attrs::from_sorted(
                arguments
                    .iter()
                    .filter(|argument| formals.iter().any(|formal| formal.name == argument.name))
                    .cloned()
                    .collect(),
            ),
        };
        self.call(forced, Value::Attrs(given), span)
    }
}

/// What an error of the path starts with: the path, when there is one.
fn lead(path: &str) -> String {
    match path {
        "" => String::new(),
        _ => format!("`-A {path}`: "),
    }
}

/// E021 for `name` missing from `attrs` (the value at `here`).
fn missing(attrs: &Attrs, name: &str, here: &str, path: &str) -> Box<Diagnostic> {
    // as a path writes them: quoted where a bare name cannot say them
    let names: Vec<String> = attrs
        .iter()
        .map(|attr| {
            let name = String::from_utf8_lossy(&attr.name).into_owned();
            let bare =
                !name.is_empty() && name.parse::<usize>().is_err() && !name.contains(['.', '"']);
            if bare { name } else { format!("\"{name}\"") }
        })
        .collect();
    let help = match did_you_mean(name, names.iter().map(String::as_str)) {
        Some(suggestion) => suggestion,
        None if names.is_empty() => format!("{here} is an empty set"),
        None => {
            let shown: Vec<String> = names
                .iter()
                .take(8)
                .map(|name| format!("`{name}`"))
                .collect();
            let more = match names.len().saturating_sub(8) {
                0 => String::new(),
                left => format!(" and {left} more"),
            };
            format!("{here} has {}{more}", shown.join(", "))
        }
    };
    Box::new(
        Diagnostic::error(
            codes::MISSING_ATTRIBUTE,
            format!("`-A {path}`: attribute `{name}` missing in {here}"),
        )
        .with_help(help),
    )
}

#[cfg(test)]
mod tests {
    use super::parse_attr_path;

    #[test]
    fn a_path_splits_at_dots_outside_quotes() {
        assert_eq!(parse_attr_path(""), Ok(Vec::new()));
        assert_eq!(parse_attr_path("a"), Ok(vec!["a".to_string()]));
        assert_eq!(
            parse_attr_path("a.\"b.c\".0"),
            Ok(vec!["a".to_string(), "b.c".to_string(), "0".to_string()])
        );
        assert!(parse_attr_path("a..b").is_err());
        assert!(parse_attr_path("a.").is_err());
        assert!(parse_attr_path(".a").is_err());
        assert!(parse_attr_path("a.\"b").is_err());
    }
}
