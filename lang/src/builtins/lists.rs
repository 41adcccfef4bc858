//! Builtins over lists. `sort` takes the steps of the C++ library's stable sort,
//! which Nix calls (`stable_sort`): any comparator gives Nix's list, never a panic.

use std::collections::BTreeSet;
use std::rc::Rc;

use super::Builtin;
use crate::codes;
use crate::compile::{IrKind, Operator, ParamIr};
use crate::eval::{Machine, Pure1, Pure2, error};
use crate::span::Span;
use crate::value::{Attr, Attrs, EvalResult, List, Over, PrimFunction, SharedCall, Thunk, Value};

pub(super) fn builtins() -> Vec<Builtin> {
    vec![
        Builtin {
            name: "all",
            arity: 2,
            function: all,
        },
        Builtin {
            name: "any",
            arity: 2,
            function: any,
        },
        Builtin {
            name: "concatLists",
            arity: 1,
            function: concat_lists,
        },
        Builtin {
            name: "concatMap",
            arity: 2,
            function: concat_map,
        },
        Builtin {
            name: "elem",
            arity: 2,
            function: elem,
        },
        Builtin {
            name: "elemAt",
            arity: 2,
            function: elem_at,
        },
        Builtin {
            name: "filter",
            arity: 2,
            function: filter,
        },
        Builtin {
            name: "foldl'",
            arity: 3,
            function: fold_left,
        },
        Builtin {
            name: "genList",
            arity: 2,
            function: gen_list,
        },
        Builtin {
            name: "genericClosure",
            arity: 1,
            function: generic_closure,
        },
        Builtin {
            name: "groupBy",
            arity: 2,
            function: group_by,
        },
        Builtin {
            name: "head",
            arity: 1,
            function: head,
        },
        Builtin {
            name: "length",
            arity: 1,
            function: length,
        },
        Builtin {
            name: "map",
            arity: 2,
            function: map,
        },
        Builtin {
            name: "partition",
            arity: 2,
            function: partition,
        },
        Builtin {
            name: "sort",
            arity: 2,
            function: sort,
        },
        Builtin {
            name: "tail",
            arity: 1,
            function: tail,
        },
    ]
}

fn quantifier(
    machine: &mut Machine,
    arguments: &[Value],
    span: Span,
    want: bool,
    name: &str,
) -> EvalResult<Value> {
    let function = machine.force_function(&arguments[0], span, name)?;
    let list = machine.force_list(&arguments[1], span, name)?;
    let pure = Pure1::new(&function);
    for item in list.iter() {
        if let Some(pure) = &pure
            && let Some(Value::Bool(result)) = pure.call(item)
        {
            if result == want {
                return Ok(Value::Bool(want));
            }
            continue;
        }
        let result = machine.apply_one(&function, item.clone(), span)?;
        if machine.force_bool(&result, span, name)? == want {
            return Ok(Value::Bool(want));
        }
    }
    Ok(Value::Bool(!want))
}

fn all(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    quantifier(machine, arguments, span, false, "`all`")
}

fn any(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    quantifier(machine, arguments, span, true, "`any`")
}

/// Lists of up to this many elements are written straight into their own
/// allocation, with no vector first; longer ones go through
/// [`Machine::list_buffer`], which reports an allocation that fails (E046).
const DIRECT_LIST: usize = 1 << 12;

/// The list of the `length` values `items` gives (no more, no fewer), made with
/// one allocation when it is short.
pub(crate) fn collect_list(
    machine: &Machine,
    length: usize,
    mut items: impl Iterator<Item = Value>,
    span: Span,
) -> EvalResult<List> {
    if length <= DIRECT_LIST {
        // a range mapped is of known length: `collect` allocates once, exactly
        return Ok((0..length)
            .map(|_| items.next().unwrap_or(Value::Null))
            .collect());
    }
    let mut buffer = machine.list_buffer(length, span)?;
    buffer.extend(items);
    Ok(List::from(buffer))
}

/// The lists one after the other. Nix's `concatLists` gives back the one list
/// that is non-empty itself (`share_single`, so it prints as `«repeated»` beside
/// that list), while its `concatMap` always makes a new list.
fn concatenate(
    machine: &mut Machine,
    lists: Vec<crate::value::List>,
    share_single: bool,
    span: Span,
) -> EvalResult<Value> {
    let total: usize = lists.iter().map(|l| l.len()).sum();
    if share_single
        && let Some(only) = lists.iter().find(|l| !l.is_empty())
        && only.len() == total
    {
        return Ok(Value::List(only.clone()));
    }
    machine.make_list(total, span)?;
    let items = lists.iter().flat_map(|list| list.iter().cloned());
    Ok(Value::List(collect_list(machine, total, items, span)?))
}

fn concat_lists(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let outer = machine.force_list(&arguments[0], span, "`concatLists`")?;
    let mut lists = Vec::with_capacity(outer.len());
    for item in outer.iter() {
        lists.push(machine.force_list(item, span, "`concatLists` element")?);
    }
    concatenate(machine, lists, true, span)
}

fn concat_map(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let function = machine.force_function(&arguments[0], span, "`concatMap`")?;
    let list = machine.force_list(&arguments[1], span, "`concatMap`")?;
    let mut lists = Vec::with_capacity(list.len());
    for item in list.iter() {
        let result = machine.apply_one(&function, item.clone(), span)?;
        lists.push(machine.force_list(
            &result,
            span,
            "the result of the function given to `concatMap`",
        )?);
    }
    concatenate(machine, lists, false, span)
}

fn elem(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let list = machine.force_list(&arguments[1], span, "`elem`")?;
    for item in list.iter() {
        if machine.equal(&arguments[0], item, span, false)? {
            return Ok(Value::Bool(true));
        }
    }
    Ok(Value::Bool(false))
}

fn elem_at(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let list = machine.force_list(&arguments[0], span, "`elemAt`")?;
    let index = machine.force_int(&arguments[1], span, "`elemAt` index")?;
    if index < 0 || index as usize >= list.len() {
        return Err(error(
            codes::INDEX_OUT_OF_BOUNDS,
            format!("list index {index} is out of bounds"),
            span,
            "indexed here",
            match list.len() {
                0 => "the list is empty; check `builtins.length` first".to_string(),
                1 => "the list has 1 element; the only valid index is 0".to_string(),
                count => format!(
                    "the list has {count} elements; valid indices are 0 to {}",
                    count - 1
                ),
            },
        ));
    }
    let item = list[index as usize].clone();
    machine.force(&item, span)
}

fn filter(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let function = machine.force_function(&arguments[0], span, "`filter`")?;
    let list = machine.force_list(&arguments[1], span, "`filter`")?;
    let pure = Pure1::new(&function);
    let mut kept = Vec::with_capacity(list.len());
    for item in list.iter() {
        if let Some(pure) = &pure
            && let Some(Value::Bool(keep)) = pure.call(item)
        {
            if keep {
                kept.push(item.clone());
            }
            continue;
        }
        let result = machine.apply_one(&function, item.clone(), span)?;
        if machine.force_bool(
            &result,
            span,
            "the result of the function given to `filter`",
        )? {
            kept.push(item.clone());
        }
    }
    if kept.len() == list.len() {
        return Ok(Value::List(list));
    }
    Ok(Value::List(List::from(kept)))
}

fn fold_left(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let function = machine.force_function(&arguments[0], span, "`foldl'`")?;
    let list = machine.force_list(&arguments[2], span, "`foldl'`")?;
    if list.is_empty() {
        return machine.force(&arguments[1], span);
    }
    // a step of arithmetic on integers already there is computed, not called
    let pure = Pure2::new(&function);
    let mut accumulator = arguments[1].clone();
    for item in list.iter() {
        if let Some(pure) = &pure
            && let Some(value) = pure.call(&accumulator, item)
        {
            accumulator = value;
            continue;
        }
        accumulator = machine.call2(&function, accumulator, item.clone(), span)?;
    }
    Ok(accumulator)
}

fn gen_list(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let count = machine.force_int(&arguments[1], span, "`genList` length")?;
    if count < 0 {
        return Err(error(
            codes::INVALID_ARGUMENT,
            format!("cannot create a list of length {count}"),
            span,
            "called here",
            "the length given to `genList` must not be negative",
        ));
    }
    if count > 1 << 32 {
        return Err(error(
            codes::VALUE_TOO_LARGE,
            format!("a list of {count} elements is too large"),
            span,
            "called here",
            "lists are limited to 2^32 elements",
        ));
    }
    machine.make_list(count as usize, span)?;
    // the function is not forced (Nix does not); one already evaluated is stored
    // as itself, and an element it computes without a call (`i: i * 2`) is stored
    // as its value, not as a thunk: that cannot fail, so no one can tell
    let function = match &arguments[0] {
        Value::Thunk(thunk) => thunk.value().unwrap_or_else(|| arguments[0].clone()),
        other => other.clone(),
    };
    let mut pure = Pure1::new(&function);
    let call = Rc::new(SharedCall {
        function: function.clone(),
        over: Over::Indices,
        span,
    });
    // a loop of pushes: a mapped range written straight into the list was slower
    let mut items = machine.list_buffer(count as usize, span)?;
    for index in 0..count {
        let argument = Value::Int(index);
        if let Some(computer) = &pure {
            match computer.call(&argument) {
                Some(value) => {
                    items.push(value);
                    continue;
                }
                // the first element it cannot compute: the rest are thunks
                None => pure = None,
            }
        }
        items.push(Thunk::generated(&call, index));
    }
    Ok(Value::List(List::from(items)))
}

fn generic_closure(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let args = machine.force_attrs(&arguments[0], span, "`genericClosure`")?;
    let missing = |name: &str| {
        error(
            codes::MISSING_ATTRIBUTE,
            format!("`genericClosure` needs the attribute `{name}`"),
            span,
            "called here",
            "call it as `genericClosure { startSet = [ ... ]; operator = item: [ ... ]; }`",
        )
    };
    let start = args
        .get(b"startSet")
        .cloned()
        .ok_or_else(|| missing("startSet"))?;
    let operator = args
        .get(b"operator")
        .cloned()
        .ok_or_else(|| missing("operator"))?;
    let start = machine.force_list(&start, span, "`genericClosure` startSet")?;
    let mut work: std::collections::VecDeque<Value> = start.iter().cloned().collect();
    let mut seen = SeenKeys::Integers(BTreeSet::new());
    let mut result = Vec::new();
    while let Some(item) = work.pop_front() {
        let attrs = machine.force_attrs(&item, span, "`genericClosure` element")?;
        let key = attrs.get(b"key").cloned().ok_or_else(|| missing("key"))?;
        let key = machine.force(&key, span)?;
        // a key is compared with every other, the first one too
        if matches!(key, Value::Opaque(_)) || crate::eval::holds_evaluated_secret(&key) {
            return Err(crate::eval::opaque_error(span));
        }
        if !seen.insert(machine, key, span)? {
            continue;
        }
        // the closure keeps every new item (and its key) and queues what the
        // operator gives: counted against the memory bound, which an endless
        // closure otherwise passed by gigabytes before the step budget ended it
        machine.make_list(1, span)?;
        result.push(item.clone());
        let next = machine.call(operator.clone(), item, span)?;
        let next =
            machine.force_list(&next, span, "the result of the `genericClosure` operator")?;
        machine.make_list(next.len(), span)?;
        work.extend(next.iter().cloned());
    }
    Ok(Value::List(List::from(result)))
}

/// The keys `genericClosure` has seen, in order. While every key is an integer,
/// or every key a string, they are kept in a B-tree (such keys compare without
/// evaluating anything and cannot fail to); from the first key of another kind on,
/// in a sorted list searched with `<`, whose comparisons (and errors, such as a
/// string against an integer) are those of keeping every key in that list from
/// the start. A list took a shift of the keys after each new one: a closure
/// finding its 100,000 keys in descending order took 4 s (Nix 0.13 s).
enum SeenKeys {
    Integers(BTreeSet<i64>),
    Strings(BTreeSet<crate::value::Bytes>),
    Sorted(Vec<Value>),
}

impl SeenKeys {
    /// Adds `key`; false if an equal key (neither is less than the other) was seen.
    fn insert(&mut self, machine: &mut Machine, key: Value, span: Span) -> EvalResult<bool> {
        match (&mut *self, &key) {
            (SeenKeys::Integers(seen), Value::Int(number)) => return Ok(seen.insert(*number)),
            (SeenKeys::Strings(seen), Value::String(text)) => return Ok(seen.insert(text.clone())),
            // the first key decides the kind
            (SeenKeys::Integers(seen), Value::String(text)) if seen.is_empty() => {
                *self = SeenKeys::Strings(BTreeSet::from([text.clone()]));
                return Ok(true);
            }
            _ => {}
        }
        let mut sorted = match std::mem::replace(self, SeenKeys::Sorted(Vec::new())) {
            SeenKeys::Integers(seen) => seen.into_iter().map(Value::Int).collect(),
            SeenKeys::Strings(seen) => seen.into_iter().map(Value::String).collect(),
            SeenKeys::Sorted(sorted) => sorted,
        };
        let inserted = insert_sorted(machine, &mut sorted, key, span);
        *self = SeenKeys::Sorted(sorted);
        inserted
    }
}

/// Adds `key` to `sorted` where a search with `<` puts it; false if an equal key
/// (neither is less than the other) is there.
fn insert_sorted(
    machine: &mut Machine,
    sorted: &mut Vec<Value>,
    key: Value,
    span: Span,
) -> EvalResult<bool> {
    let mut low = 0;
    let mut high = sorted.len();
    while low < high {
        let middle = (low + high) / 2;
        if machine.less_than(&sorted[middle], &key, span)? {
            low = middle + 1;
        } else if machine.less_than(&key, &sorted[middle], span)? {
            high = middle;
        } else {
            return Ok(false);
        }
    }
    sorted.insert(low, key);
    Ok(true)
}

fn group_by(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let function = machine.force_function(&arguments[0], span, "`groupBy`")?;
    let list = machine.force_list(&arguments[1], span, "`groupBy`")?;
    let mut groups: std::collections::BTreeMap<crate::value::Bytes, Vec<Value>> =
        std::collections::BTreeMap::new();
    for item in list.iter() {
        let key = machine.apply_one(&function, item.clone(), span)?;
        let key =
            machine.force_string(&key, span, "the result of the function given to `groupBy`")?;
        groups.entry(key).or_default().push(item.clone());
    }
    Ok(Value::Attrs(Attrs::from_sorted(
        groups
            .into_iter()
            .map(|(name, items)| Attr {
                name: crate::name::Name::new(&name),
                value: Value::List(List::from(items)),
                span: None,
            })
            .collect(),
    )))
}

fn empty_list(name: &str, span: Span) -> Box<crate::diagnostic::Diagnostic> {
    error(
        codes::EMPTY_LIST,
        format!("`{name}` of an empty list"),
        span,
        "the list is empty here",
        "check the list with `builtins.length` or `== [ ]` first",
    )
}

fn head(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let list = machine.force_list(&arguments[0], span, "`head`")?;
    match list.first() {
        Some(item) => {
            let item = item.clone();
            machine.force(&item, span)
        }
        None => Err(empty_list("builtins.head", span)),
    }
}

fn tail(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let list = machine.force_list(&arguments[0], span, "`tail`")?;
    if list.is_empty() {
        return Err(empty_list("builtins.tail", span));
    }
    Ok(Value::List(List::from(&list[1..])))
}

fn length(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let list = machine.force_list(&arguments[0], span, "`length`")?;
    Ok(Value::Int(list.len() as i64))
}

fn map(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let list = machine.force_list(&arguments[1], span, "`map`")?;
    // the elements share one call: a thunk each and nothing more (the list of
    // thunks is one allocation: a range mapped is of known length)
    let call = Rc::new(SharedCall {
        function: arguments[0].clone(),
        over: Over::List(list.clone()),
        span,
    });
    let items: List = (0..list.len())
        .map(|index| Thunk::generated(&call, index as i64))
        .collect();
    Ok(Value::List(items))
}

fn partition(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let function = machine.force_function(&arguments[0], span, "`partition`")?;
    let list = machine.force_list(&arguments[1], span, "`partition`")?;
    let mut right = Vec::new();
    let mut wrong = Vec::new();
    for item in list.iter() {
        let result = machine.apply_one(&function, item.clone(), span)?;
        if machine.force_bool(
            &result,
            span,
            "the result of the function given to `partition`",
        )? {
            right.push(item.clone());
        } else {
            wrong.push(item.clone());
        }
    }
    Ok(Value::Attrs(Attrs::from_sorted(vec![
        Attr {
            name: crate::name::Name::of("right"),
            value: Value::List(List::from(right)),
            span: None,
        },
        Attr {
            name: crate::name::Name::of("wrong"),
            value: Value::List(List::from(wrong)),
            span: None,
        },
    ])))
}

fn sort(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let comparator = machine.force_function(&arguments[0], span, "`sort`")?;
    let list = machine.force_list(&arguments[1], span, "`sort`")?;
    // Nix forces every element before sorting; the forced values are what is sorted,
    // so that no comparison goes through a thunk again
    let mut items: Vec<Value> = Vec::with_capacity(list.len());
    for item in list.iter() {
        items.push(machine.force(item, span)?);
    }
    if items.len() >= 2 {
        if is_less_than(&comparator) {
            // as Nix does for `lessThan`: compare directly, without calls
            sort_less_than(machine, &mut items, span)?;
            return Ok(Value::List(List::from(items)));
        }
        if let Some(reversed) = written_less_than(&comparator)
            && sort_plain(&mut items, reversed)
        {
            return Ok(Value::List(List::from(items)));
        }
    }
    // a comparator of comparisons on values already there (`a: b: a.p < b.p`) is
    // computed, not called; the fields it reads are forced by the calls before
    let pure = Pure2::new(&comparator);
    let mut less = |machine: &mut Machine, left: &Value, right: &Value| -> EvalResult<bool> {
        if let Some(pure) = &pure
            && let Some(Value::Bool(less)) = pure.call(left, right)
        {
            return Ok(less);
        }
        let result = machine.call2(&comparator, left.clone(), right.clone(), span)?;
        machine.force_bool(
            &result,
            span,
            "the result of the comparator given to `sort`",
        )
    };
    merge_sort(machine, &mut items, &mut less)?;
    Ok(Value::List(List::from(items)))
}

type Less<'a> = dyn FnMut(&mut Machine, &Value, &Value) -> EvalResult<bool> + 'a;

fn is_less_than(function: &Value) -> bool {
    matches!(function, Value::PrimOp(primop)
        if primop.name == "lessThan" && matches!(primop.function, PrimFunction::Builtin(_)))
}

/// Is the comparator written `a: b: a < b` (`Some(false)`) or `a: b: b < a` (`a > b`,
/// `Some(true)`)? Then sorting integers or strings needs no call of it: what the
/// calls would give is their order, and on them `<` cannot fail.
fn written_less_than(comparator: &Value) -> Option<bool> {
    let Value::Lambda(closure) = comparator else {
        return None;
    };
    let (ParamIr::Identifier, IrKind::Lambda(inner)) =
        (&closure.lambda.param, &closure.lambda.body.kind)
    else {
        return None;
    };
    let (
        ParamIr::Identifier,
        IrKind::Binary {
            op: Operator::Less,
            left,
            right,
        },
    ) = (&inner.param, &inner.body.kind)
    else {
        return None;
    };
    match (&left.kind, &right.kind) {
        (IrKind::Var { up: 1, slot: 0 }, IrKind::Var { up: 0, slot: 0 }) => Some(false),
        (IrKind::Var { up: 0, slot: 0 }, IrKind::Var { up: 1, slot: 0 }) => Some(true),
        _ => None,
    }
}

/// Sorts evaluated integers or strings by `<` (descending if `reversed`), stably,
/// as the merge sort with that comparator would; false (nothing moved) for any
/// other list.
fn sort_plain(items: &mut [Value], reversed: bool) -> bool {
    if items.iter().all(|item| matches!(item, Value::Int(_))) {
        let key = |item: &Value| match item {
            Value::Int(number) => *number,
            _ => 0,
        };
        if reversed {
            items.sort_by_key(|item| std::cmp::Reverse(key(item)));
        } else {
            items.sort_by_key(key);
        }
        return true;
    }
    if items.iter().all(|item| matches!(item, Value::String(_))) {
        items.sort_by(|left, right| match (left, right) {
            (Value::String(left), Value::String(right)) if reversed => right.cmp(left),
            (Value::String(left), Value::String(right)) => left.cmp(right),
            _ => std::cmp::Ordering::Equal,
        });
        return true;
    }
    false
}

/// `sort lessThan`: integers and strings (the usual lists) by a stable sort of their
/// own, anything else through `lessThan`'s comparison. All give what the stable
/// merge sort with `lessThan` gives, since it is a strict weak order on them.
fn sort_less_than(machine: &mut Machine, items: &mut [Value], span: Span) -> EvalResult<()> {
    if items.iter().all(|item| matches!(item, Value::Int(_))) {
        items.sort_by_key(|item| match item {
            Value::Int(number) => *number,
            _ => 0,
        });
        return Ok(());
    }
    if items.iter().all(|item| matches!(item, Value::String(_))) {
        items.sort_by(|left, right| match (left, right) {
            (Value::String(left), Value::String(right)) => left.cmp(right),
            _ => std::cmp::Ordering::Equal,
        });
        return Ok(());
    }
    merge_sort(machine, items, &mut |machine, left, right| {
        machine.less_than(left, right, span)
    })
}

/// `items` in the order Nix's `std::stable_sort` gives them, `less(a, b)` meaning
/// a goes first (see `stable_sort`).
fn merge_sort(machine: &mut Machine, items: &mut [Value], less: &mut Less<'_>) -> EvalResult<()> {
    super::stable_sort::stable_sort(items, &mut |left, right| less(machine, left, right))
}
