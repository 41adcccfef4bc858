//! Differential property test: random well-formed programs, each printed by the
//! `lang` crate and by the real `nix-instantiate --eval --strict`, must print the same
//! bytes. The generator makes only programs whose output may not legitimately differ:
//! no paths (absolute in the output), no integer overflow (an error in mesh, wrapped in
//! Nix 2.8), no errors. It needs `nix-instantiate` (Debian's `nix-bin`) and
//! fails when it is missing. It writes only to a temporary directory.
//!
//! `MESH_DIFFERENTIAL_CASES` sets how many programs run (default 200);
//! `MESH_DIFFERENTIAL_SEED` sets the first seed (case `i` uses seed + i), so a failing
//! case reruns alone with `MESH_DIFFERENTIAL_SEED=<seed> MESH_DIFFERENTIAL_CASES=1`;
//! `MESH_DIFFERENTIAL_SHOW=1` prints every program with both outputs.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;
use std::sync::Arc;

use lang::{Limits, Machine, MemoryLoader};

const DEFAULT_CASES: u64 = 200;
const DEFAULT_SEED: u64 = 0x6d65_7368_0000;
/// Programs per `nix-instantiate` call (it prints one line per file).
const BATCH: usize = 40;
/// No integer the generator writes may reach this magnitude, so nothing overflows.
const INT_LIMIT: i64 = 1 << 40;

// ---- a small deterministic random source --------------------------------------------

/// SplitMix64: a few lines, good enough, the same on every machine.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound`.
    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    fn range(&mut self, low: i64, high: i64) -> i64 {
        low + self.below((high - low + 1) as u64) as i64
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize].clone()
    }
}

// ---- types the generator tracks -------------------------------------------------------

/// What the generator knows about an expression's value, enough to use it safely.
#[derive(Clone, Debug)]
enum Ty {
    /// An integer whose magnitude is at most `bound`.
    Int {
        bound: i64,
    },
    Bool,
    Str,
    /// A list of `element`s whose length is between `min` and `max`.
    List {
        element: Box<Ty>,
        min: usize,
        max: usize,
    },
    /// A set with (at least) these attributes.
    Attrs(Vec<(String, Ty)>),
}

fn int(bound: i64) -> Ty {
    Ty::Int { bound }
}

fn list_of(element: Ty, min: usize, max: usize) -> Ty {
    Ty::List {
        element: Box::new(element),
        min,
        max,
    }
}

/// A generated expression: its text (parenthesized unless atomic) and type.
struct Made {
    text: String,
    ty: Ty,
}

fn made(text: impl Into<String>, ty: Ty) -> Made {
    Made {
        text: text.into(),
        ty,
    }
}

fn int_bound(ty: &Ty) -> i64 {
    match ty {
        Ty::Int { bound } => *bound,
        _ => INT_LIMIT,
    }
}

/// The kind of value asked for; the generator picks the details.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Want {
    Int,
    Bool,
    Str,
    IntList,
    StrList,
    Attrs,
}

const ALL_WANTS: [Want; 6] = [
    Want::Int,
    Want::Bool,
    Want::Str,
    Want::IntList,
    Want::StrList,
    Want::Attrs,
];

fn want_of(ty: &Ty) -> Option<Want> {
    Some(match ty {
        Ty::Int { .. } => Want::Int,
        Ty::Bool => Want::Bool,
        Ty::Str => Want::Str,
        Ty::List { element, .. } => match **element {
            Ty::Int { .. } => Want::IntList,
            Ty::Str => Want::StrList,
            _ => return None,
        },
        Ty::Attrs(_) => Want::Attrs,
    })
}

const FIELD_NAMES: [&str; 8] = [
    "a",
    "b",
    "c",
    "x",
    "y",
    "name",
    "\"with space\"",
    "\"${\"dyn\"}\"",
];

/// The name as printed inside a set when selected: quoted names are selected quoted.
fn plain_field(name: &str) -> String {
    if name == "\"${\"dyn\"}\"" {
        "dyn".to_string()
    } else {
        name.to_string()
    }
}

struct Generator {
    random: Random,
    /// Variables in scope: name and type.
    scope: Vec<(String, Ty)>,
    next_name: usize,
}

impl Generator {
    fn new(seed: u64) -> Generator {
        Generator {
            random: Random(seed),
            scope: Vec::new(),
            next_name: 0,
        }
    }

    fn fresh(&mut self) -> String {
        self.next_name += 1;
        format!("v{}", self.next_name)
    }

    /// The whole program: a set of a few results of different kinds.
    fn program(&mut self) -> String {
        let count = self.random.range(2, 5);
        let mut text = String::from("{\n");
        for index in 0..count {
            if self.random.chance(20) {
                let value = self.float_expr(3);
                let _ = writeln!(text, "  r{index} = {value};");
                continue;
            }
            let want = self.random.pick(&ALL_WANTS);
            let value = self.expr(want, 4);
            let _ = writeln!(text, "  r{index} = {};", value.text);
        }
        text.push('}');
        text.push('\n');
        text
    }

    /// A float made from integers: printed with C++'s `%g`-like stream formatting at
    /// the top level, with `%f` through `toString`, in lists, in JSON.
    fn float_expr(&mut self, depth: u32) -> String {
        const LITERALS: [&str; 10] = [
            "0.1", "1.5", "2.0", "3.0", "7.0", "0.001", "1.0e3", "2.5e-3", "123456.0", "1.0e7",
        ];
        let integer = self.expr(Want::Int, depth);
        let literal = self.random.pick(&LITERALS);
        let float = match self.random.below(5) {
            0 => format!("({} * {literal})", integer.text),
            1 => format!("({} / {literal})", integer.text),
            2 => format!("({literal} + {})", integer.text),
            3 => format!(
                "(builtins.foldl' (a: b: a + b * {literal}) 0.5 [ 1 2 {} ])",
                integer.text
            ),
            _ => format!("({} - {literal} * {literal})", integer.text),
        };
        match self.random.below(4) {
            0 => format!("(toString {float})"),
            1 => format!("[ {float} (builtins.typeOf {float}) ]"),
            2 => format!("(builtins.toJSON {float})"),
            _ => float,
        }
    }

    fn variable(&mut self, want: Want) -> Option<Made> {
        let candidates: Vec<(String, Ty)> = self
            .scope
            .iter()
            .filter(|(_, ty)| want_of(ty) == Some(want))
            .cloned()
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let (name, ty) = self.random.pick(&candidates);
        Some(made(name, ty))
    }

    fn expr(&mut self, want: Want, depth: u32) -> Made {
        if depth == 0 || self.random.chance(15) {
            if self.random.chance(50)
                && let Some(variable) = self.variable(want)
            {
                return variable;
            }
            return self.leaf(want);
        }
        // forms that work for every kind of value
        match self.random.below(12) {
            0 => return self.let_in(want, depth),
            1 => return self.if_then_else(want, depth),
            2 => return self.lambda_call(want, depth),
            3 => return self.select_from_set(want, depth),
            _ => {}
        }
        match want {
            Want::Int => self.int_expr(depth),
            Want::Bool => self.bool_expr(depth),
            Want::Str => self.str_expr(depth),
            Want::IntList => self.list_expr(Want::Int, depth),
            Want::StrList => self.list_expr(Want::Str, depth),
            Want::Attrs => self.attrs_expr(depth),
        }
    }

    fn leaf(&mut self, want: Want) -> Made {
        match want {
            Want::Int => {
                let value = self.random.range(-20, 100);
                if value < 0 {
                    made(format!("({value})"), int(value.abs()))
                } else {
                    made(value.to_string(), int(value))
                }
            }
            Want::Bool => made(
                if self.random.chance(50) {
                    "true"
                } else {
                    "false"
                },
                Ty::Bool,
            ),
            Want::Str => made(self.string_literal(), Ty::Str),
            Want::IntList | Want::StrList => {
                let element_want = if want == Want::IntList {
                    Want::Int
                } else {
                    Want::Str
                };
                let count = self.random.range(0, 4) as usize;
                let mut items = Vec::new();
                let mut element = self.leaf(element_want).ty;
                for _ in 0..count {
                    let item = self.leaf(element_want);
                    element = join(&element, &item.ty);
                    items.push(item.text);
                }
                if items.is_empty() {
                    return made("[ ]", list_of(element, 0, 0));
                }
                made(
                    format!("[ {} ]", items.join(" ")),
                    list_of(element, count, count),
                )
            }
            Want::Attrs => made("{ }", Ty::Attrs(Vec::new())),
        }
    }

    fn string_literal(&mut self) -> String {
        const PIECES: [&str; 16] = [
            "a", "b", "mesh", "Z", "0", "9", " ", "-", "_", ".", "\\n", "\\t", "\\\"", "\\\\",
            "\\${", "é",
        ];
        let length = self.random.below(5);
        let mut text = String::from("\"");
        for _ in 0..length {
            text.push_str(self.random.pick(&PIECES));
        }
        text.push('"');
        text
    }

    fn let_in(&mut self, want: Want, depth: u32) -> Made {
        let count = self.random.range(1, 3);
        let mut bindings = String::new();
        let mut added = 0;
        for _ in 0..count {
            let bound_want = self.random.pick(&ALL_WANTS);
            let value = self.expr(bound_want, depth - 1);
            let name = self.fresh();
            let _ = write!(bindings, "{name} = {}; ", value.text);
            // later bindings may use earlier ones (a `let` is recursive)
            self.scope.push((name, value.ty));
            added += 1;
        }
        let body = self.expr(want, depth - 1);
        for _ in 0..added {
            self.scope.pop();
        }
        made(format!("(let {bindings}in {})", body.text), body.ty)
    }

    fn if_then_else(&mut self, want: Want, depth: u32) -> Made {
        let condition = self.expr(Want::Bool, depth - 1);
        let then = self.expr(want, depth - 1);
        let otherwise = self.expr(want, depth - 1);
        let ty = join(&then.ty, &otherwise.ty);
        made(
            format!(
                "(if {} then {} else {})",
                condition.text, then.text, otherwise.text
            ),
            ty,
        )
    }

    /// A function applied at once: plain, with formals and defaults, `...` and `@`.
    fn lambda_call(&mut self, want: Want, depth: u32) -> Made {
        if self.random.chance(50) {
            let argument_want = self.random.pick(&ALL_WANTS);
            let argument = self.expr(argument_want, depth - 1);
            let name = self.fresh();
            self.scope.push((name.clone(), argument.ty.clone()));
            let body = self.expr(want, depth - 1);
            self.scope.pop();
            return made(
                format!("(({name}: {}) {})", body.text, argument.text),
                body.ty,
            );
        }
        let first = self.fresh();
        let second = self.fresh();
        let first_value = self.expr(Want::Int, depth - 1);
        let default_value = self.expr(Want::Str, depth - 1);
        let pass_second = self.random.chance(50);
        let second_value = self.expr(Want::Str, depth - 1);
        let ellipsis = self.random.chance(50);
        let at = if self.random.chance(40) {
            Some(self.fresh())
        } else {
            None
        };
        self.scope.push((first.clone(), first_value.ty.clone()));
        self.scope.push((second.clone(), Ty::Str));
        let mut argument_fields = vec![(first.clone(), first_value.ty.clone())];
        if pass_second {
            argument_fields.push((second.clone(), Ty::Str));
        }
        if let Some(at) = &at {
            self.scope
                .push((at.clone(), Ty::Attrs(argument_fields.clone())));
        }
        let body = self.expr(want, depth - 1);
        if at.is_some() {
            self.scope.pop();
        }
        self.scope.pop();
        self.scope.pop();
        let mut argument = format!("{{ {first} = {}; ", first_value.text);
        if pass_second {
            let _ = write!(argument, "{second} = {}; ", second_value.text);
        }
        // an unused extra argument, where no `@` name could print or compare it
        if ellipsis && at.is_none() && self.random.chance(70) {
            argument.push_str("extra = throw \"unused\"; ");
        }
        argument.push('}');
        let pattern = format!(
            "{{ {first}, {second} ? {}{} }}{}",
            default_value.text,
            if ellipsis { ", ..." } else { "" },
            at.map(|at| format!("@{at}")).unwrap_or_default()
        );
        made(format!("(({pattern}: {}) {argument})", body.text), body.ty)
    }

    /// A set made on the spot (or found in scope) with an attribute of the wanted
    /// kind, selected directly, with `or`, or through `with`.
    fn select_from_set(&mut self, want: Want, depth: u32) -> Made {
        if self.random.chance(25) {
            // a set that may lack the attribute: `or` gives the default
            let set = self.attrs_expr(depth - 1);
            let fallback = self.expr(want, depth - 1);
            let Ty::Attrs(fields) = &set.ty else {
                unreachable!()
            };
            if let Some((name, ty)) = fields
                .iter()
                .find(|(_, ty)| want_of(ty) == Some(want))
                .cloned()
            {
                return made(
                    format!("({}.{} or {})", set.text, plain_field(&name), fallback.text),
                    join(&ty, &fallback.ty),
                );
            }
            return made(
                format!("({}.missing or {})", set.text, fallback.text),
                fallback.ty,
            );
        }
        // a set that has it, besides other attributes
        let other = self.small_set(depth - 1);
        let Ty::Attrs(fields) = &other.ty else {
            unreachable!()
        };
        let value = self.expr(want, depth - 1);
        let free: Vec<&str> = FIELD_NAMES
            .iter()
            .copied()
            .filter(|name| !fields.iter().any(|(field, _)| field == name))
            .collect();
        let name = self.random.pick(&free);
        let set_text = format!("({} // {{ {name} = {}; }})", other.text, value.text);
        let name = plain_field(name);
        if self.random.chance(25) && !name.starts_with('"') {
            // `with` gives the attribute (no lexical binding has a field's name)
            return made(format!("(with {set_text}; {name})"), value.ty);
        }
        made(format!("{set_text}.{name}"), value.ty)
    }

    fn int_expr(&mut self, depth: u32) -> Made {
        match self.random.below(11) {
            0 | 1 => {
                let left = self.expr(Want::Int, depth - 1);
                let right = self.expr(Want::Int, depth - 1);
                let bound = int_bound(&left.ty) + int_bound(&right.ty);
                let op = if self.random.chance(50) { "+" } else { "-" };
                if bound >= INT_LIMIT {
                    return left;
                }
                made(format!("({} {op} {})", left.text, right.text), int(bound))
            }
            2 => {
                let left = self.expr(Want::Int, depth - 1);
                let right = self.expr(Want::Int, depth - 1);
                let bound = int_bound(&left.ty).saturating_mul(int_bound(&right.ty));
                if bound >= INT_LIMIT {
                    return right;
                }
                made(format!("({} * {})", left.text, right.text), int(bound))
            }
            3 => {
                let left = self.expr(Want::Int, depth - 1);
                let divisor = self.random.range(1, 7);
                let sign = if self.random.chance(20) { "-" } else { "" };
                made(
                    format!("({} / ({sign}{divisor}))", left.text),
                    int(int_bound(&left.ty)),
                )
            }
            4 => {
                let list = self.expr(Want::IntList, depth - 1);
                let (min, max, element) = list_parts(&list.ty);
                let _ = min;
                let bound = (max as i64).saturating_mul(int_bound(&element));
                if bound >= INT_LIMIT {
                    return made(format!("(builtins.length {})", list.text), int(max as i64));
                }
                let (accumulator, item) = (self.fresh(), self.fresh());
                made(
                    format!(
                        "(builtins.foldl' ({accumulator}: {item}: {accumulator} + {item}) 0 {})",
                        list.text
                    ),
                    int(bound),
                )
            }
            5 => {
                let want = if self.random.chance(50) {
                    Want::IntList
                } else {
                    Want::StrList
                };
                let list = self.expr(want, depth - 1);
                let (_, max, _) = list_parts(&list.ty);
                made(format!("(builtins.length {})", list.text), int(max as i64))
            }
            6 => {
                let list = self.expr(Want::IntList, depth - 1);
                let (min, _, element) = list_parts(&list.ty);
                if min == 0 {
                    return made(
                        format!("(builtins.length {})", list.text),
                        int(list_parts(&list.ty).1 as i64),
                    );
                }
                let index = self.random.below(min as u64);
                if index == 0 && self.random.chance(50) {
                    return made(format!("(builtins.head {})", list.text), element);
                }
                made(format!("(builtins.elemAt {} {index})", list.text), element)
            }
            7 => {
                let text = self.expr(Want::Str, depth - 1);
                made(
                    format!("(builtins.stringLength {})", text.text),
                    int(10_000),
                )
            }
            8 => {
                let set = self.attrs_expr(depth - 1);
                let Ty::Attrs(fields) = &set.ty else {
                    unreachable!()
                };
                made(
                    format!("(builtins.length (builtins.attrNames {}))", set.text),
                    int(fields.len() as i64 + 10),
                )
            }
            9 => {
                let left = self.expr(Want::Int, depth - 1);
                let right = self.expr(Want::Int, depth - 1);
                let name = self.random.pick(&["bitAnd", "bitOr", "bitXor"]);
                // two's complement: the result is no larger than twice the larger bound
                let bound = 2 * int_bound(&left.ty).max(int_bound(&right.ty)) + 1;
                made(
                    format!("(builtins.{name} {} {})", left.text, right.text),
                    int(bound),
                )
            }
            _ => {
                let text = self.expr(Want::Str, depth - 1);
                let other = self.expr(Want::Str, depth - 1);
                made(
                    format!("(builtins.compareVersions {} {})", text.text, other.text),
                    int(1),
                )
            }
        }
    }

    fn bool_expr(&mut self, depth: u32) -> Made {
        match self.random.below(9) {
            0 => {
                let left = self.expr(Want::Int, depth - 1);
                let right = self.expr(Want::Int, depth - 1);
                let op = self.random.pick(&["<", "<=", ">", ">=", "==", "!="]);
                made(format!("({} {op} {})", left.text, right.text), Ty::Bool)
            }
            1 => {
                let want = self.random.pick(&ALL_WANTS);
                let left = self.expr(want, depth - 1);
                let right = self.expr(want, depth - 1);
                let op = self.random.pick(&["==", "!="]);
                made(format!("({} {op} {})", left.text, right.text), Ty::Bool)
            }
            2 => {
                let left = self.expr(Want::Str, depth - 1);
                let right = self.expr(Want::Str, depth - 1);
                made(format!("({} < {})", left.text, right.text), Ty::Bool)
            }
            3 => {
                let inner = self.expr(Want::Bool, depth - 1);
                made(format!("(!{})", inner.text), Ty::Bool)
            }
            4 => {
                let left = self.expr(Want::Bool, depth - 1);
                let right = self.expr(Want::Bool, depth - 1);
                let op = self.random.pick(&["&&", "||", "->"]);
                made(format!("({} {op} {})", left.text, right.text), Ty::Bool)
            }
            5 => {
                let item = self.expr(Want::Int, depth - 1);
                let list = self.expr(Want::IntList, depth - 1);
                made(
                    format!("(builtins.elem {} {})", item.text, list.text),
                    Ty::Bool,
                )
            }
            6 => {
                let set = self.attrs_expr(depth - 1);
                let name = plain_field(self.random.pick(&FIELD_NAMES));
                made(format!("({} ? {name})", set.text), Ty::Bool)
            }
            7 => {
                let list = self.expr(Want::IntList, depth - 1);
                let limit = self.random.range(-5, 50);
                let name = self.random.pick(&["any", "all"]);
                let item = self.fresh();
                made(
                    format!(
                        "(builtins.{name} ({item}: {item} > ({limit})) {})",
                        list.text
                    ),
                    Ty::Bool,
                )
            }
            _ => {
                let want = self.random.pick(&ALL_WANTS);
                let value = self.expr(want, depth - 1);
                let name = self.random.pick(&[
                    "isInt",
                    "isString",
                    "isList",
                    "isAttrs",
                    "isBool",
                    "isFunction",
                    "isNull",
                ]);
                made(format!("(builtins.{name} {})", value.text), Ty::Bool)
            }
        }
    }

    fn str_expr(&mut self, depth: u32) -> Made {
        match self.random.below(10) {
            0 | 1 => {
                // interpolation of strings and of `toString` of integers
                let mut text = String::from("\"");
                for _ in 0..self.random.range(1, 3) {
                    let literal = self.string_literal();
                    text.push_str(&literal[1..literal.len() - 1]);
                    if self.random.chance(50) {
                        let inner = self.expr(Want::Str, depth - 1);
                        let _ = write!(text, "${{{}}}", inner.text);
                    } else {
                        let inner = self.expr(Want::Int, depth - 1);
                        let _ = write!(text, "${{toString {}}}", inner.text);
                    }
                }
                text.push('"');
                made(text, Ty::Str)
            }
            2 => {
                let left = self.expr(Want::Str, depth - 1);
                let right = self.expr(Want::Str, depth - 1);
                made(format!("({} + {})", left.text, right.text), Ty::Str)
            }
            3 => {
                let separator = self.string_literal();
                let list = if self.random.chance(50) {
                    let list = self.expr(Want::IntList, depth - 1);
                    format!("(map toString {})", list.text)
                } else {
                    self.expr(Want::StrList, depth - 1).text
                };
                made(
                    format!("(builtins.concatStringsSep {separator} {list})"),
                    Ty::Str,
                )
            }
            4 => {
                let want = self
                    .random
                    .pick(&[Want::Int, Want::Bool, Want::Str, Want::IntList]);
                let value = self.expr(want, depth - 1);
                made(format!("(toString {})", value.text), Ty::Str)
            }
            5 => {
                let text = self.expr(Want::Str, depth - 1);
                let start = self.random.range(0, 4);
                let length = self.random.range(0, 5);
                made(
                    format!("(builtins.substring {start} {length} {})", text.text),
                    Ty::Str,
                )
            }
            6 => {
                let want = self.random.pick(&ALL_WANTS);
                let value = self.expr(want, depth - 1);
                let function = if self.random.chance(50) {
                    "builtins.typeOf"
                } else {
                    "builtins.toJSON"
                };
                made(format!("({function} {})", value.text), Ty::Str)
            }
            7 => {
                let text = self.expr(Want::Str, depth - 1);
                made(
                    format!(
                        "(builtins.replaceStrings [ \"a\" \"b\" ] [ \"bb\" \"\" ] {})",
                        text.text
                    ),
                    Ty::Str,
                )
            }
            8 => {
                // an indented string: indentation stripped, `''${` and `'''` escapes
                let inner = self.expr(Want::Str, depth - 1);
                let indent = " ".repeat(self.random.range(0, 4) as usize);
                made(
                    format!(
                        "(''\n{indent}  first ''${{not}} ''' line\n{indent}    ${{{}}} second\n{indent}  '')",
                        inner.text
                    ),
                    Ty::Str,
                )
            }
            _ => {
                let list = self.expr(Want::StrList, depth - 1);
                let (min, _, _) = list_parts(&list.ty);
                if min == 0 {
                    return self.leaf(Want::Str);
                }
                let index = self.random.below(min as u64);
                made(format!("(builtins.elemAt {} {index})", list.text), Ty::Str)
            }
        }
    }

    fn list_expr(&mut self, element_want: Want, depth: u32) -> Made {
        let list_want = if element_want == Want::Int {
            Want::IntList
        } else {
            Want::StrList
        };
        match self.random.below(9) {
            0 | 1 => {
                let count = self.random.range(0, 4) as usize;
                let mut items = Vec::new();
                let mut element = None::<Ty>;
                for _ in 0..count {
                    let item = self.expr(element_want, depth - 1);
                    element = Some(match element {
                        None => item.ty.clone(),
                        Some(previous) => join(&previous, &item.ty),
                    });
                    items.push(item.text);
                }
                let element = element.unwrap_or_else(|| self.leaf(element_want).ty);
                if items.is_empty() {
                    return made("[ ]", list_of(element, 0, 0));
                }
                made(
                    format!("[ {} ]", items.join(" ")),
                    list_of(element, count, count),
                )
            }
            2 => {
                // map from a list of either kind
                let source_want = self.random.pick(&[Want::IntList, Want::StrList]);
                let source = self.expr(source_want, depth - 1);
                let (min, max, source_element) = list_parts(&source.ty);
                let item = self.fresh();
                self.scope.push((item.clone(), source_element));
                let body = self.expr(element_want, depth - 1);
                self.scope.pop();
                made(
                    format!("(map ({item}: {}) {})", body.text, source.text),
                    list_of(body.ty, min, max),
                )
            }
            3 => {
                let source = self.expr(list_want, depth - 1);
                let (_, max, element) = list_parts(&source.ty);
                let item = self.fresh();
                self.scope.push((item.clone(), element.clone()));
                let condition = self.expr(Want::Bool, depth - 1);
                self.scope.pop();
                made(
                    format!(
                        "(builtins.filter ({item}: {}) {})",
                        condition.text, source.text
                    ),
                    list_of(element, 0, max),
                )
            }
            4 => {
                let count = self.random.range(0, 6) as usize;
                let index = self.fresh();
                self.scope.push((index.clone(), int(count as i64)));
                let body = self.expr(element_want, depth - 1);
                self.scope.pop();
                made(
                    format!("(builtins.genList ({index}: {}) {count})", body.text),
                    list_of(body.ty, count, count),
                )
            }
            5 => {
                let left = self.expr(list_want, depth - 1);
                let right = self.expr(list_want, depth - 1);
                let (left_min, left_max, left_element) = list_parts(&left.ty);
                let (right_min, right_max, right_element) = list_parts(&right.ty);
                made(
                    format!("({} ++ {})", left.text, right.text),
                    list_of(
                        join(&left_element, &right_element),
                        left_min + right_min,
                        left_max + right_max,
                    ),
                )
            }
            6 => {
                let source = self.expr(list_want, depth - 1);
                let comparator = if self.random.chance(50) {
                    "builtins.lessThan".to_string()
                } else {
                    let (a, b) = (self.fresh(), self.fresh());
                    let op = if self.random.chance(50) { "<" } else { ">" };
                    format!("({a}: {b}: {a} {op} {b})")
                };
                made(
                    format!("(builtins.sort {comparator} {})", source.text),
                    source.ty,
                )
            }
            7 => {
                let source = self.expr(list_want, depth - 1);
                let (min, max, element) = list_parts(&source.ty);
                if min == 0 {
                    return source;
                }
                made(
                    format!("(builtins.tail {})", source.text),
                    list_of(element, min - 1, max - 1),
                )
            }
            _ => {
                if element_want == Want::Str {
                    let set = self.attrs_expr(depth - 1);
                    let Ty::Attrs(fields) = &set.ty else {
                        unreachable!()
                    };
                    let count = fields.len();
                    return made(
                        format!("(builtins.attrNames {})", set.text),
                        list_of(Ty::Str, count, count + 8),
                    );
                }
                let outer = self.random.range(0, 3) as usize;
                let mut lists = Vec::new();
                let (mut min, mut max, mut element) = (0, 0, int(0));
                for _ in 0..outer {
                    let list = self.expr(list_want, depth - 1);
                    let (list_min, list_max, list_element) = list_parts(&list.ty);
                    min += list_min;
                    max += list_max;
                    element = join(&element, &list_element);
                    lists.push(list.text);
                }
                made(
                    format!("(builtins.concatLists [ {} ])", lists.join(" ")),
                    list_of(element, min, max),
                )
            }
        }
    }

    fn attrs_expr(&mut self, depth: u32) -> Made {
        if depth == 0 {
            return self.small_set(0);
        }
        match self.random.below(8) {
            0..=2 => self.small_set(depth - 1),
            3 => {
                // `rec`: later attributes use earlier ones (names no `with` below gives, which
                // the recursive scope would shadow)
                let first = self.expr(Want::Int, depth - 1);
                let second_op = self.random.range(1, 9);
                let text = format!(
                    "(rec {{ p = {}; q = p + {second_op}; s = \"${{toString q}}!\"; }})",
                    first.text
                );
                let bound = int_bound(&first.ty);
                made(
                    text,
                    Ty::Attrs(vec![
                        ("p".into(), int(bound)),
                        ("q".into(), int(bound + 9)),
                        ("s".into(), Ty::Str),
                    ]),
                )
            }
            4 => {
                let left = self.attrs_expr(depth - 1);
                let right = self.attrs_expr(depth - 1);
                let (Ty::Attrs(left_fields), Ty::Attrs(right_fields)) = (&left.ty, &right.ty)
                else {
                    unreachable!()
                };
                let mut fields: Vec<(String, Ty)> = left_fields
                    .iter()
                    .filter(|(name, _)| !right_fields.iter().any(|(other, _)| other == name))
                    .cloned()
                    .collect();
                fields.extend(right_fields.iter().cloned());
                made(
                    format!("({} // {})", left.text, right.text),
                    Ty::Attrs(fields),
                )
            }
            5 => {
                // listToAttrs with names made from the elements (duplicates: first wins)
                let list = self.expr(Want::IntList, depth - 1);
                let item = self.fresh();
                made(
                    format!(
                        "(builtins.listToAttrs (map ({item}: {{ name = \"k${{toString {item}}}\"; value = {item}; }}) {}))",
                        list.text
                    ),
                    Ty::Attrs(Vec::new()),
                )
            }
            6 if self.random.chance(50) => {
                let list = self.expr(Want::IntList, depth - 1);
                let item = self.fresh();
                let limit = self.random.range(-5, 60);
                if self.random.chance(50) {
                    return made(
                        format!(
                            "(builtins.partition ({item}: {item} > ({limit})) {})",
                            list.text
                        ),
                        Ty::Attrs(Vec::new()),
                    );
                }
                made(
                    format!(
                        "(builtins.groupBy ({item}: if {item} > ({limit}) then \"big\" else \"small\") {})",
                        list.text
                    ),
                    Ty::Attrs(Vec::new()),
                )
            }
            6 => {
                let left = self.small_set(depth - 1);
                let right = self.small_set(depth - 1);
                let names = self.expr(Want::StrList, depth - 1);
                let form = self.random.below(3);
                let text = match form {
                    0 => format!("(builtins.removeAttrs {} {})", left.text, names.text),
                    1 => format!("(builtins.intersectAttrs {} {})", left.text, right.text),
                    _ => format!(
                        "{{ values = builtins.catAttrs \"a\" [ {} {} ]; }}",
                        left.text, right.text
                    ),
                };
                made(text, Ty::Attrs(Vec::new()))
            }
            7 if self.random.chance(30) => {
                let set = self.small_set(depth - 1);
                let (name, value) = (self.fresh(), self.fresh());
                let Ty::Attrs(fields) = &set.ty else {
                    unreachable!()
                };
                let fields = fields
                    .iter()
                    .map(|(field, _)| (field.clone(), Ty::Str))
                    .collect();
                made(
                    format!(
                        "(builtins.mapAttrs ({name}: {value}: \"${{{name}}}=${{builtins.typeOf {value}}}\") {})",
                        set.text
                    ),
                    Ty::Attrs(fields),
                )
            }
            _ => {
                // a shared value printed twice: `«repeated»` where Nix prints it
                let want = self
                    .random
                    .pick(&[Want::IntList, Want::Attrs, Want::StrList]);
                let value = self.expr(want, depth - 1);
                let name = self.fresh();
                made(
                    format!(
                        "(let {name} = {}; in {{ first = {name}; second = {name}; both = [ {name} {name} ]; }})",
                        value.text
                    ),
                    Ty::Attrs(vec![
                        ("first".into(), value.ty.clone()),
                        ("second".into(), value.ty),
                    ]),
                )
            }
        }
    }

    /// `{ name = value; ... }` with distinct names, some nested `a.b = ...` paths.
    fn small_set(&mut self, depth: u32) -> Made {
        let count = self.random.range(0, 4) as usize;
        let mut names: Vec<&str> = Vec::new();
        while names.len() < count {
            let name = self.random.pick(&FIELD_NAMES);
            if !names.contains(&name) {
                names.push(name);
            }
        }
        let mut text = String::from("{ ");
        let mut fields = Vec::new();
        for name in names {
            let want = self.random.pick(&ALL_WANTS);
            let value = if depth == 0 {
                self.leaf(want)
            } else {
                self.expr(want, depth)
            };
            let _ = write!(text, "{name} = {}; ", value.text);
            fields.push((name.to_string(), value.ty));
        }
        if self.random.chance(20) {
            let _ = write!(text, "nested.inner = 1; nested.other = \"o\"; ");
            fields.push((
                "nested".into(),
                Ty::Attrs(vec![("inner".into(), int(1)), ("other".into(), Ty::Str)]),
            ));
        }
        if self.random.chance(15) {
            text.push_str("inherit (builtins) true; ");
        }
        text.push('}');
        made(text, Ty::Attrs(fields))
    }
}

fn list_parts(ty: &Ty) -> (usize, usize, Ty) {
    match ty {
        Ty::List { element, min, max } => (*min, *max, (**element).clone()),
        _ => (0, 0, int(0)),
    }
}

/// The type of a value that is one of two.
fn join(left: &Ty, right: &Ty) -> Ty {
    match (left, right) {
        (Ty::Int { bound: a }, Ty::Int { bound: b }) => int(*a.max(b)),
        (
            Ty::List {
                element: a,
                min: a_min,
                max: a_max,
            },
            Ty::List {
                element: b,
                min: b_min,
                max: b_max,
            },
        ) => list_of(join(a, b), *a_min.min(b_min), *a_max.max(b_max)),
        (Ty::Attrs(a), Ty::Attrs(b)) => Ty::Attrs(
            a.iter()
                .filter_map(|(name, ty)| {
                    b.iter()
                        .find(|(other, _)| other == name)
                        .and_then(|(_, other_ty)| {
                            (want_of(ty) == want_of(other_ty))
                                .then(|| (name.clone(), join(ty, other_ty)))
                        })
                })
                .collect(),
        ),
        (left, _) => left.clone(),
    }
}

// ---- running both sides ---------------------------------------------------------------

fn nix_instantiate() -> PathBuf {
    let found = Command::new("nix-instantiate").arg("--version").output();
    match found {
        Ok(output) if output.status.success() => PathBuf::from("nix-instantiate"),
        _ => panic!(
            "the differential test needs `nix-instantiate` (Nix 2.8) as its reference: \
             install Debian's `nix-bin` (`apt-get install nix-bin`, or run `scripts/test`, \
             which installs it)"
        ),
    }
}

/// What one side printed: stdout on success, or that it failed (and why).
#[derive(Debug, Clone, PartialEq)]
enum Printed {
    Value(String),
    Error(String),
}

fn run_nix(nix: &Path, files: &[PathBuf]) -> Vec<Printed> {
    let output = Command::new(nix)
        .args(["--eval", "--strict"])
        .args(files)
        .output()
        .expect("nix-instantiate runs");
    if output.status.success() {
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let lines: Vec<&str> = stdout.lines().collect();
        if lines.len() == files.len() {
            return lines
                .into_iter()
                .map(|line| Printed::Value(format!("{line}\n")))
                .collect();
        }
    }
    if files.len() == 1 {
        return vec![Printed::Error(
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )];
    }
    // one of them failed: find out which, one file at a time
    files
        .iter()
        .flat_map(|file| run_nix(nix, std::slice::from_ref(file)))
        .collect()
}

fn run_mesh(directory: PathBuf, programs: Vec<(PathBuf, String)>) -> Vec<Printed> {
    lang::eval::run_with_stack(move || {
        programs
            .into_iter()
            .map(|(path, text)| {
                let mut machine = Machine::new(
                    Rc::new(MemoryLoader::new()),
                    vec![directory.clone()],
                    Limits::default(),
                );
                let value = machine.eval_source(
                    &path.display().to_string(),
                    Some(path.clone()),
                    Arc::from(text.as_bytes()),
                    &directory,
                );
                match value.and_then(|value| machine.print_strict(&value).map_err(|e| vec![*e])) {
                    Ok(bytes) => Printed::Value(format!("{}\n", String::from_utf8_lossy(&bytes))),
                    Err(diagnostics) => Printed::Error(
                        diagnostics
                            .iter()
                            .map(|d| format!("{}: {}", d.code, d.message))
                            .collect::<Vec<_>>()
                            .join("\n"),
                    ),
                }
            })
            .collect()
    })
    .expect("an evaluation thread")
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(text) => {
            let text = text.trim();
            let parsed = if let Some(hex) = text.strip_prefix("0x") {
                u64::from_str_radix(hex, 16)
            } else {
                text.parse()
            };
            parsed.unwrap_or_else(|_| panic!("{name} must be a number, not `{text}`"))
        }
        Err(_) => default,
    }
}

#[test]
fn random_programs_print_as_nix_prints_them() {
    let nix = nix_instantiate();
    let cases = env_number("MESH_DIFFERENTIAL_CASES", DEFAULT_CASES);
    let first_seed = env_number("MESH_DIFFERENTIAL_SEED", DEFAULT_SEED);
    let directory = std::env::temp_dir().join(format!("mesh-differential-{}", std::process::id()));
    std::fs::create_dir_all(&directory).expect("a temporary directory");
    let directory = directory.canonicalize().expect("a canonical directory");

    let mut programs = Vec::new();
    for case in 0..cases {
        let seed = first_seed.wrapping_add(case);
        let text = Generator::new(seed).program();
        let path = directory.join(format!("case-{seed:x}.nix"));
        std::fs::write(&path, &text).expect("a program file");
        programs.push((seed, path, text));
    }

    let mut nix_outputs = Vec::new();
    for chunk in programs.chunks(BATCH) {
        let files: Vec<PathBuf> = chunk.iter().map(|(_, path, _)| path.clone()).collect();
        nix_outputs.extend(run_nix(&nix, &files));
    }
    let mesh_outputs = run_mesh(
        directory.clone(),
        programs
            .iter()
            .map(|(_, path, text)| (path.clone(), text.clone()))
            .collect(),
    );

    let show = std::env::var_os("MESH_DIFFERENTIAL_SHOW").is_some();
    let mut mismatches = Vec::new();
    let mut both_failed = 0;
    for (((seed, _, text), nix_output), mesh_output) in
        programs.iter().zip(&nix_outputs).zip(&mesh_outputs)
    {
        if show {
            eprintln!("seed {seed:#x}:\n{text}=> {nix_output:?}\n=> {mesh_output:?}\n");
        }
        match (nix_output, mesh_output) {
            (Printed::Value(expected), Printed::Value(actual)) if expected == actual => {}
            (Printed::Error(_), Printed::Error(_)) => both_failed += 1,
            _ => mismatches.push(format!(
                "seed {seed:#x} (rerun: MESH_DIFFERENTIAL_SEED={seed:#x} MESH_DIFFERENTIAL_CASES=1)\n\
                 --- program ---\n{text}--- nix-instantiate ---\n{nix_output:?}\n--- mesh ---\n{mesh_output:?}\n"
            )),
        }
    }
    let _ = std::fs::remove_dir_all(&directory);
    assert!(
        mismatches.is_empty(),
        "{} of {cases} programs print differently:\n\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    // the generator makes programs that succeed; if many fail on both sides it has
    // drifted and tests less than it claims
    assert!(
        both_failed * 20 <= cases,
        "{both_failed} of {cases} generated programs fail in both nix-instantiate and mesh: \
         the generator makes programs that are not well-formed"
    );
    let total_bytes: usize = programs.iter().map(|(_, _, text)| text.len()).sum();
    eprintln!(
        "{cases} random programs ({total_bytes} bytes) printed the same in mesh and \
         nix-instantiate; {both_failed} failed in both"
    );
}
