//! Builtins over attribute sets. Values are shared, never copied, as in Nix.

use std::rc::Rc;

use super::Builtin;
use crate::codes;
use crate::eval::{Machine, error};
use crate::name::Name;
use crate::span::Span;
use crate::value::{
    Attr, Attrs, EvalResult, Groups, Over, SharedCall, Thunk, Value, compare_names,
};

pub(super) fn builtins() -> Vec<Builtin> {
    vec![
        Builtin {
            name: "attrNames",
            arity: 1,
            function: attr_names,
        },
        Builtin {
            name: "attrValues",
            arity: 1,
            function: attr_values,
        },
        Builtin {
            name: "catAttrs",
            arity: 2,
            function: cat_attrs,
        },
        Builtin {
            name: "getAttr",
            arity: 2,
            function: get_attr,
        },
        Builtin {
            name: "hasAttr",
            arity: 2,
            function: has_attr,
        },
        Builtin {
            name: "intersectAttrs",
            arity: 2,
            function: intersect_attrs,
        },
        Builtin {
            name: "listToAttrs",
            arity: 1,
            function: list_to_attrs,
        },
        Builtin {
            name: "mapAttrs",
            arity: 2,
            function: map_attrs,
        },
        Builtin {
            name: "removeAttrs",
            arity: 2,
            function: remove_attrs,
        },
        Builtin {
            name: "zipAttrsWith",
            arity: 2,
            function: zip_attrs_with,
        },
    ]
}

fn attr_names(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let attrs = machine.force_attrs(&arguments[0], span, "`attrNames`")?;
    // collected straight into the list: one allocation of the exact size
    let names: crate::value::List = attrs
        .iter()
        .map(|attr| Value::String(attr.name.string()))
        .collect();
    Ok(Value::List(names))
}

fn attr_values(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let attrs = machine.force_attrs(&arguments[0], span, "`attrValues`")?;
    let values: crate::value::List = attrs.iter().map(|attr| attr.value.clone()).collect();
    Ok(Value::List(values))
}

fn cat_attrs(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let name = machine.force_string(&arguments[0], span, "`catAttrs`")?;
    let list = machine.force_list(&arguments[1], span, "`catAttrs`")?;
    let mut values = Vec::new();
    for item in list.iter() {
        let attrs = machine.force_attrs(item, span, "`catAttrs`")?;
        if let Some(value) = attrs.get(&name) {
            values.push(value.clone());
        }
    }
    Ok(Value::List(crate::value::List::from(values)))
}

fn get_attr(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let name = machine.force_string(&arguments[0], span, "`getAttr`")?;
    let attrs = machine.force_attrs(&arguments[1], span, "`getAttr`")?;
    match attrs.get(&name) {
        Some(value) => {
            let value = value.clone();
            machine.force(&value, span)
        }
        None => {
            let text = String::from_utf8_lossy(&name).into_owned();
            let names: Vec<String> = attrs
                .iter()
                .map(|a| String::from_utf8_lossy(&a.name).into_owned())
                .collect();
            let help = crate::diagnostic::did_you_mean(&text, names.iter().map(String::as_str))
                .unwrap_or_else(|| "test for it first with `builtins.hasAttr`".to_string());
            Err(error(
                codes::MISSING_ATTRIBUTE,
                format!("attribute `{text}` missing"),
                span,
                "selected here",
                help,
            ))
        }
    }
}

fn has_attr(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let name = machine.force_string(&arguments[0], span, "`hasAttr`")?;
    let attrs = machine.force_attrs(&arguments[1], span, "`hasAttr`")?;
    Ok(Value::Bool(attrs.contains(&name)))
}

fn intersect_attrs(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let left = machine.force_attrs(&arguments[0], span, "`intersectAttrs`")?;
    let right = machine.force_attrs(&arguments[1], span, "`intersectAttrs`")?;
    // the smaller side is walked and the larger searched; either way in order
    let entries: Vec<Attr> = if left.len() < right.len() {
        left.iter()
            .filter_map(|attr| right.get_attr(attr.name))
            .cloned()
            .collect()
    } else {
        right
            .iter()
            .filter(|attr| left.contains(attr.name))
            .cloned()
            .collect()
    };
    Ok(Value::Attrs(Attrs::from_sorted(entries)))
}

fn list_to_attrs(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    // the interned names: a pair written `{ name = ...; value = ...; }` has these
    // very names, found by address
    let (name_key, value_key) = (
        crate::name::Name::of("name"),
        crate::name::Name::of("value"),
    );
    let list = machine.force_list(&arguments[0], span, "`listToAttrs`")?;
    machine.make_attrs(list.len(), span)?;
    let mut entries = Vec::with_capacity(list.len());
    for item in list.iter() {
        let pair = machine.force_attrs(item, span, "`listToAttrs` element")?;
        let Some(name) = pair.get(name_key).cloned() else {
            return Err(error(
                codes::MISSING_ATTRIBUTE,
                "`listToAttrs` element has no attribute `name`",
                span,
                "called here",
                "each element must be `{ name = ...; value = ...; }`",
            ));
        };
        let name = machine.force_string(&name, span, "`listToAttrs` element name")?;
        let Some(value_attr) = pair.get_attr(value_key) else {
            return Err(error(
                codes::MISSING_ATTRIBUTE,
                "`listToAttrs` element has no attribute `value`",
                span,
                "called here",
                "each element must be `{ name = ...; value = ...; }`",
            ));
        };
        entries.push(Attr {
            name: Name::new(&name),
            value: value_attr.value.clone(),
            span: value_attr.span,
        });
    }
    Ok(Value::Attrs(Attrs::from_unsorted(entries)))
}

fn map_attrs(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let attrs = machine.force_attrs(&arguments[1], span, "`mapAttrs`")?;
    // the attributes share one call: a thunk each and nothing more
    let call = Rc::new(SharedCall {
        function: arguments[0].clone(),
        over: Over::Attrs(attrs.clone()),
        span,
    });
    let entries: Vec<Attr> = attrs
        .iter()
        .enumerate()
        .map(|(index, attr)| Attr {
            name: attr.name,
            value: Thunk::generated(&call, index as i64),
            // Nix 2.8 gives the new attributes no position (`unsafeGetAttrPos` is null)
            span: None,
        })
        .collect();
    Ok(Value::Attrs(Attrs::from_sorted(entries)))
}

fn remove_attrs(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let attrs = machine.force_attrs(&arguments[0], span, "`removeAttrs`")?;
    let names = machine.force_list(&arguments[1], span, "`removeAttrs`")?;
    let mut removed = Vec::with_capacity(names.len());
    for name in names.iter() {
        removed.push(machine.force_string(name, span, "`removeAttrs` name")?);
    }
    // many names are sorted once and searched, not compared with every attribute
    let many = removed.len() > 8;
    if many {
        removed.sort_unstable_by(|left, right| compare_names(left, right));
    }
    let is_removed = |name: &Name| {
        if many {
            removed
                .binary_search_by(|removed| compare_names(removed, name))
                .is_ok()
        } else {
            removed
                .iter()
                .any(|removed| removed.len() == name.len() && **removed == **name)
        }
    };
    let entries: Vec<Attr> = attrs
        .iter()
        .filter(|attr| !is_removed(&attr.name))
        .cloned()
        .collect();
    Ok(Value::Attrs(Attrs::from_sorted(entries)))
}

fn zip_attrs_with(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let function = machine.force_function(&arguments[0], span, "`zipAttrsWith`")?;
    let sets = machine.force_list(&arguments[1], span, "`zipAttrsWith`")?;
    let mut forced = Vec::with_capacity(sets.len());
    for set in sets.iter() {
        forced.push(machine.force_attrs(set, span, "`zipAttrsWith` element")?);
    }
    // every attribute by name, and by set among equal names: each set is a run
    // sorted by name, which a stable sort merges (no map of groups)
    let mut all: Vec<(Name, &Value)> =
        Vec::with_capacity(forced.iter().map(|attrs| attrs.len()).sum());
    for attrs in &forced {
        all.extend(attrs.iter().map(|attr| (attr.name, &attr.value)));
    }
    if forced.len() > 1 {
        all.sort_by_key(|(name, _)| *name);
    }
    // each group starts where its name first appears in the run
    let mut starts: Vec<(Name, usize)> = Vec::new();
    for (position, (name, _)) in all.iter().enumerate() {
        if starts.last().is_none_or(|(last, _)| !last.same(*name)) {
            starts.push((*name, position));
        }
    }
    let values: Box<[Value]> = all.iter().map(|(_, value)| (*value).clone()).collect();
    let names: Vec<Name> = starts.iter().map(|(name, _)| *name).collect();
    // the groups share one call: a thunk each and nothing more
    let call = Rc::new(SharedCall {
        function,
        over: Over::Groups(Box::new(Groups {
            values,
            starts: starts.into_boxed_slice(),
        })),
        span,
    });
    let entries: Vec<Attr> = names
        .into_iter()
        .enumerate()
        .map(|(index, name)| Attr {
            name,
            value: Thunk::generated(&call, index as i64),
            span: None,
        })
        .collect();
    Ok(Value::Attrs(Attrs::from_sorted(entries)))
}
