//! `Machine::reclaim`: the frames of recursive scopes that no root reaches are
//! emptied (their cycles broken, their memory freed), and a value passed as a root
//! keeps working after a pass, even one whose parts were made and forced since
//! recording started. Uses only memory.

use std::path::{Path, PathBuf};
use std::rc::{Rc, Weak};
use std::sync::Arc;

use lang::value::EnvFrame;
use lang::{Limits, Machine, MemoryLoader, Span, Value};

fn machine() -> Machine {
    let mut machine = Machine::new(
        Rc::new(MemoryLoader::new()),
        vec![PathBuf::from("/reclaim")],
        Limits::default(),
    );
    machine.reclaim_start(1);
    machine
}

fn evaluate(machine: &mut Machine, source: &str) -> Value {
    let text: Arc<[u8]> = Arc::from(source.as_bytes());
    machine
        .eval_source("reclaim.nix", None, text, Path::new("/reclaim"))
        .unwrap_or_else(|errors| panic!("{source}: {errors:?}"))
}

fn printed(machine: &mut Machine, value: &Value) -> String {
    let bytes = machine
        .print_strict(value)
        .unwrap_or_else(|error| panic!("{error:?}"));
    String::from_utf8(bytes).expect("printed as UTF-8")
}

/// The frame a function closes over.
fn frame_of(value: &Value) -> Weak<EnvFrame> {
    match value {
        Value::Lambda(closure) => Rc::downgrade(&closure.env),
        other => panic!("not a function: {}", other.type_name()),
    }
}

#[test]
fn an_unreachable_recursive_frame_is_freed_and_a_root_is_kept() {
    let mut machine = machine();
    // `f` lives in the `let` frame and closes over it: a cycle counting never frees
    let source = "let xs = [ 1 2 3 ]; f = n: if n == 0 then xs else f (n - 1); in f";
    let dropped = evaluate(&mut machine, source);
    let dropped_frame = frame_of(&dropped);
    drop(dropped);
    // another text: not the same value from a cache
    let kept = evaluate(&mut machine, &format!("{source} "));
    let kept_frame = frame_of(&kept);
    assert!(
        dropped_frame.upgrade().is_some(),
        "the cycle keeps the frame alive"
    );

    let emptied = machine.reclaim(std::slice::from_ref(&kept));
    assert!(emptied >= 1, "nothing was emptied");
    assert!(
        dropped_frame.upgrade().is_none(),
        "the unreachable frame was not freed"
    );
    assert!(kept_frame.upgrade().is_some(), "the root's frame was freed");
    let result = machine
        .call(kept, Value::Int(3), Span::default())
        .and_then(|value| machine.force_deep(&value, Span::default()))
        .unwrap_or_else(|error| panic!("{error:?}"));
    assert_eq!(printed(&mut machine, &result), "[ 1 2 3 ]");
}

#[test]
fn parts_made_and_forced_after_the_start_stay_usable_through_a_root() {
    let mut machine = machine();
    // a module-like record whose lazy parts make their own `let` frames when first
    // forced: forced once, reclaimed, then used again, forced parts and new ones
    let record = evaluate(
        &mut machine,
        "let table = builtins.genList (i: let square = i * i; in { inherit square; twice = square * 2; add = x: x + square; }) 4;
         in { inherit table; pick = n: builtins.elemAt table n; }",
    );
    let first = evaluate(&mut machine, "r: (r.pick 2).square");
    let first = machine
        .call(first, record.clone(), Span::default())
        .unwrap_or_else(|error| panic!("{error:?}"));
    assert_eq!(printed(&mut machine, &first), "4");
    machine.reclaim(std::slice::from_ref(&record));
    let again = evaluate(
        &mut machine,
        "r: [ (r.pick 2).twice ((r.pick 2).add 1) (r.pick 3).twice ]",
    );
    let again = machine
        .call(again, record.clone(), Span::default())
        .and_then(|value| machine.force_deep(&value, Span::default()))
        .unwrap_or_else(|error| panic!("{error:?}"));
    assert_eq!(printed(&mut machine, &again), "[ 8 5 18 ]");
}

#[test]
fn the_elements_of_a_map_map_attrs_or_zip_attrs_with_keep_what_they_run_over() {
    // each element of `map f xs`, `mapAttrs f s` and `zipAttrsWith f [ s ]` shares
    // one call that holds `f` and `xs` (or `s`, or the groups of values): a pass
    // must reach what the elements will read through it.
    // Here it is reached through nothing else: `f` is a builtin or closes over a
    // scope without it, and the `let` frame of the first element is reached only
    // from `xs` (or `s`), through an attribute not yet forced.
    let cases = [
        (
            "(xs: builtins.seq (builtins.elemAt xs 0).next (map (builtins.getAttr \"later\") xs))
             (builtins.genList (i: let base = i * 10; in { inherit base; next = base + 1; later = \"x${toString base}\"; }) 2)",
            "[ \"x0\" \"x10\" ]",
        ),
        (
            "(s: builtins.seq s.later.next (builtins.mapAttrs builtins.getAttr s))
             { later = let base = 7; in { inherit base; next = base + 1; later = \"x${toString base}\"; }; }",
            "{ later = \"x7\"; }",
        ),
        (
            "let pick = name: builtins.map (builtins.getAttr name); in
             (s: builtins.seq s.later.next (builtins.zipAttrsWith pick [ s ]))
             { later = let base = 7; in { inherit base; next = base + 1; later = \"x${toString base}\"; }; }",
            "{ later = [ \"x7\" ]; }",
        ),
    ];
    for (source, expected) in cases {
        let mut machine = machine();
        let root = evaluate(&mut machine, source);
        machine.reclaim(std::slice::from_ref(&root));
        let result = machine
            .force_deep(&root, Span::default())
            .unwrap_or_else(|error| panic!("{source}: {error:?}"));
        assert_eq!(printed(&mut machine, &result), expected, "{source}");
    }
}
