//! Runtime values. A value is either evaluated (weak head normal form) or a thunk that
//! evaluates to one when forced. Sharing is by `Rc`: two places hold the same list or
//! attribute set exactly when Nix would hold the same one, which is what decides
//! where `«repeated»` is printed.

use std::any::Any;
use std::cell::{OnceCell, RefCell};
use std::fmt;
use std::rc::Rc;

use crate::compile::{Ir, LambdaIr};
use crate::diagnostic::Diagnostic;
pub use crate::name::Name;
use crate::span::Span;

/// Attribute names and strings are byte strings, as in Nix. One pointer (a
/// [`Value`] is two words): the bytes sit behind the count, made from a buffer
/// without copying it.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(Rc<Box<[u8]>>);

impl Bytes {
    /// Whether both are the same string (not only equal ones).
    pub fn ptr_eq(left: &Bytes, right: &Bytes) -> bool {
        Rc::ptr_eq(&left.0, &right.0)
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl std::borrow::Borrow<[u8]> for Bytes {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

impl From<&[u8]> for Bytes {
    fn from(bytes: &[u8]) -> Bytes {
        Bytes(Rc::new(Box::from(bytes)))
    }
}

impl From<&str> for Bytes {
    fn from(text: &str) -> Bytes {
        Bytes::from(text.as_bytes())
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(bytes: Vec<u8>) -> Bytes {
        Bytes(Rc::new(bytes.into_boxed_slice()))
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{:?}", String::from_utf8_lossy(self))
    }
}

pub type EvalResult<T> = Result<T, Box<Diagnostic>>;

#[derive(Clone)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(Bytes),
    /// An absolute, canonical path.
    Path(Bytes),
    Attrs(Attrs),
    List(List),
    Lambda(Rc<Closure>),
    PrimOp(Rc<PrimOp>),
    PrimOpApp(Rc<PrimOpApp>),
    Thunk(Rc<Thunk>),
    /// A value the host gives the language that it may pass around and nothing else
    /// (a secret handle): comparing, printing or converting it is an error.
    Opaque(Rc<Box<dyn Opaque>>),
}

/// A host value the language can only pass along.
pub trait Opaque: Any {
    /// What it is called in diagnostics ("secret").
    fn type_name(&self) -> &'static str;
    fn as_any(&self) -> &dyn Any;
}

impl Value {
    pub fn string(bytes: &[u8]) -> Value {
        Value::String(Bytes::from(bytes))
    }

    pub fn string_from(text: &str) -> Value {
        Value::String(Bytes::from(text))
    }

    /// Nix's `typeOf` name; thunks are "thunk" (callers force first).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::String(_) => "string",
            Value::Path(_) => "path",
            Value::Attrs(_) => "set",
            Value::List(_) => "list",
            Value::Lambda(_) | Value::PrimOp(_) | Value::PrimOpApp(_) => "lambda",
            Value::Thunk(_) => "thunk",
            Value::Opaque(opaque) => opaque.type_name(),
        }
    }

    /// How diagnostics name the type: "an integer", "a set".
    pub fn describe_type(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a Boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::String(_) => "a string",
            Value::Path(_) => "a path",
            Value::Attrs(_) => "a set",
            Value::List(_) => "a list",
            Value::Lambda(_) => "a function",
            Value::PrimOp(_) => "a built-in function",
            Value::PrimOpApp(_) => "a partially applied built-in function",
            Value::Thunk(_) => "a thunk",
            Value::Opaque(_) => "a secret",
        }
    }

    pub fn is_function(&self) -> bool {
        matches!(
            self,
            Value::Lambda(_) | Value::PrimOp(_) | Value::PrimOpApp(_)
        )
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => write!(formatter, "null"),
            Value::Bool(value) => write!(formatter, "{value}"),
            Value::Int(value) => write!(formatter, "{value}"),
            Value::Float(value) => write!(formatter, "{value}"),
            Value::String(bytes) => write!(formatter, "{:?}", String::from_utf8_lossy(bytes)),
            Value::Path(bytes) => write!(formatter, "{}", String::from_utf8_lossy(bytes)),
            Value::Attrs(attrs) => {
                write!(formatter, "{{ ")?;
                for attr in attrs.iter() {
                    write!(
                        formatter,
                        "{} = {:?}; ",
                        String::from_utf8_lossy(&attr.name),
                        attr.value
                    )?;
                }
                write!(formatter, "}}")
            }
            Value::List(list) => formatter.debug_list().entries(list.iter()).finish(),
            Value::Lambda(_) => write!(formatter, "<LAMBDA>"),
            Value::PrimOp(_) => write!(formatter, "<PRIMOP>"),
            Value::PrimOpApp(_) => write!(formatter, "<PRIMOP-APP>"),
            Value::Thunk(_) => write!(formatter, "<CODE>"),
            Value::Opaque(opaque) => write!(formatter, "<{}>", opaque.type_name()),
        }
    }
}

/// A list; its identity (for `«repeated»`) is the `Rc`. One pointer (a [`Value`]
/// is two words): the elements sit behind the count, made from a vector without
/// copying it.
#[derive(Clone, Default)]
pub struct List(Rc<Box<[Value]>>);

impl List {
    /// Whether both are the same list (not only equal ones).
    #[inline]
    pub fn ptr_eq(left: &List, right: &List) -> bool {
        Rc::ptr_eq(&left.0, &right.0)
    }

    /// The list's address, an identity for as long as it lives.
    #[inline]
    pub fn address(&self) -> usize {
        Rc::as_ptr(&self.0) as usize
    }

    /// Whether this is the list's only holder (no other strong or weak reference).
    #[inline]
    pub fn is_unique(&self) -> bool {
        Rc::strong_count(&self.0) == 1 && Rc::weak_count(&self.0) == 0
    }
}

impl std::ops::Deref for List {
    type Target = [Value];
    #[inline]
    fn deref(&self) -> &[Value] {
        &self.0
    }
}

impl From<Vec<Value>> for List {
    fn from(values: Vec<Value>) -> List {
        List(Rc::new(values.into_boxed_slice()))
    }
}

impl From<&[Value]> for List {
    fn from(values: &[Value]) -> List {
        List(Rc::new(Box::from(values)))
    }
}

impl FromIterator<Value> for List {
    fn from_iter<I: IntoIterator<Item = Value>>(values: I) -> List {
        List(Rc::new(values.into_iter().collect()))
    }
}

impl<'l> IntoIterator for &'l List {
    type Item = &'l Value;
    type IntoIter = std::slice::Iter<'l, Value>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl fmt::Debug for List {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.debug_list().entries(self.iter()).finish()
    }
}

/// One attribute: name, value and where it was defined (if it was written down).
#[derive(Clone, Debug)]
pub struct Attr {
    pub name: Name,
    pub value: Value,
    pub span: Option<Span>,
}

/// Sets of at most this many attributes are searched from the start, not halved
/// (a record of 9 to 16 fields, as `defaults // profile // node` makes, is read
/// faster by comparing addresses than by halving over the names' keys).
const SMALL_SET: usize = 16;

/// What an attribute can be looked up by: its [`Name`] (compared by address in a
/// small set, mostly by the names' keys in a large one) or its bytes.
pub trait AttrKey {
    fn find_in(self, entries: &[Attr]) -> Option<&Attr>;
}

impl AttrKey for Name {
    #[inline]
    fn find_in(self, entries: &[Attr]) -> Option<&Attr> {
        if entries.len() <= SMALL_SET {
            return entries.iter().find(|attr| attr.name.same(self));
        }
        entries
            .binary_search_by(|attr| attr.name.cmp(&self))
            .ok()
            .and_then(|index| entries.get(index))
    }
}

impl AttrKey for &Name {
    #[inline]
    fn find_in(self, entries: &[Attr]) -> Option<&Attr> {
        (*self).find_in(entries)
    }
}

impl AttrKey for &[u8] {
    fn find_in(self, entries: &[Attr]) -> Option<&Attr> {
        if entries.len() <= SMALL_SET {
            // a different length rejects without reading the name's bytes
            return entries
                .iter()
                .find(|attr| attr.name.len() == self.len() && *attr.name == *self);
        }
        entries
            .binary_search_by(|attr| compare_names(&attr.name, self))
            .ok()
            .and_then(|index| entries.get(index))
    }
}

impl<const N: usize> AttrKey for &[u8; N] {
    fn find_in(self, entries: &[Attr]) -> Option<&Attr> {
        self[..].find_in(entries)
    }
}

impl AttrKey for &Bytes {
    fn find_in(self, entries: &[Attr]) -> Option<&Attr> {
        self[..].find_in(entries)
    }
}

impl AttrKey for &Vec<u8> {
    fn find_in(self, entries: &[Attr]) -> Option<&Attr> {
        self[..].find_in(entries)
    }
}

/// An attribute set: attributes sorted by name, names unique. Shared: a clone is
/// the same set (Nix's pointer to the same bindings, which is what decides
/// `«repeated»` and comparisons by identity). The attributes are a vector behind
/// the count, not a slice inside it: `Rc<[Attr]>` cannot be filled in place on
/// stable Rust, and copying into it cost more than the pointer it saves.
#[derive(Clone)]
pub struct Attrs {
    entries: Rc<Vec<Attr>>,
}

impl Default for Attrs {
    fn default() -> Attrs {
        Attrs {
            entries: Rc::new(Vec::new()),
        }
    }
}

impl fmt::Debug for Attrs {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.debug_list().entries(self.entries.iter()).finish()
    }
}

/// Byte order of two attribute names, as `<[u8]>::cmp`. Names are short and usually
/// differ early: comparing in place beats a call to `memcmp` per probe (a tenth of a
/// fleet build's lookups went to the call).
#[inline]
pub fn compare_names(left: &[u8], right: &[u8]) -> std::cmp::Ordering {
    for (left_byte, right_byte) in left.iter().zip(right) {
        if left_byte != right_byte {
            return left_byte.cmp(right_byte);
        }
    }
    left.len().cmp(&right.len())
}

impl Attrs {
    pub fn new() -> Attrs {
        Attrs::default()
    }

    /// From attributes already sorted by name with unique names.
    pub fn from_sorted(entries: Vec<Attr>) -> Attrs {
        debug_assert!(entries.windows(2).all(|w| w[0].name < w[1].name));
        Attrs {
            entries: Rc::new(entries),
        }
    }

    /// The attribute named `name` among attributes sorted by name.
    pub fn find_sorted(entries: &[Attr], name: impl AttrKey) -> Option<&Attr> {
        name.find_in(entries)
    }

    /// Whether both are the same set (not only equal ones).
    #[inline]
    pub fn ptr_eq(left: &Attrs, right: &Attrs) -> bool {
        Rc::ptr_eq(&left.entries, &right.entries)
    }

    /// The set's address, an identity for as long as it lives.
    #[inline]
    pub fn address(&self) -> usize {
        Rc::as_ptr(&self.entries) as usize
    }

    /// From attributes in any order; the first of equal names wins.
    pub fn from_unsorted(mut entries: Vec<Attr>) -> Attrs {
        // hosts and `listToAttrs` of generated names often give them in order already
        if entries.windows(2).all(|pair| pair[0].name < pair[1].name) {
            return Attrs::from_sorted(entries);
        }
        entries.sort_by_key(|left| left.name);
        entries.dedup_by(|later, earlier| later.name == earlier.name);
        Attrs::from_sorted(entries)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value of the attribute `name`: a [`Name`] is found by address (names
    /// are interned), bytes by comparing them.
    #[inline]
    pub fn get(&self, name: impl AttrKey) -> Option<&Value> {
        name.find_in(&self.entries).map(|attr| &attr.value)
    }

    #[inline]
    pub fn get_attr(&self, name: impl AttrKey) -> Option<&Attr> {
        name.find_in(&self.entries)
    }

    pub fn contains(&self, name: impl AttrKey) -> bool {
        name.find_in(&self.entries).is_some()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Attr> {
        self.entries.iter()
    }

    pub fn entries(&self) -> &[Attr] {
        &self.entries
    }

    /// The attributes, moved out when this is the set's only holder.
    pub fn into_entries(self) -> Vec<Attr> {
        Rc::try_unwrap(self.entries).unwrap_or_else(|shared| shared.to_vec())
    }

    /// `self // other`: a merge of two sorted runs; `other` wins. A few attributes
    /// over many (`acc // { x = ...; }` in a fold) are placed by binary search and
    /// the runs between them copied whole, not compared name by name.
    pub fn update(&self, other: &Attrs) -> Attrs {
        let (left, right) = (&self.entries, &other.entries);
        let mut entries = Vec::with_capacity(left.len() + right.len());
        if right.len().saturating_mul(8) < left.len() {
            let mut rest = &left[..];
            for attr in right.iter() {
                match rest.binary_search_by(|existing| existing.name.cmp(&attr.name)) {
                    Ok(index) => {
                        entries.extend_from_slice(&rest[..index]);
                        rest = &rest[index + 1..];
                    }
                    Err(index) => {
                        entries.extend_from_slice(&rest[..index]);
                        rest = &rest[index..];
                    }
                }
                entries.push(attr.clone());
            }
            entries.extend_from_slice(rest);
            return Attrs::from_sorted(entries);
        }
        let (mut l, mut r) = (0, 0);
        while l < left.len() && r < right.len() {
            match left[l].name.cmp(&right[r].name) {
                std::cmp::Ordering::Less => {
                    entries.push(left[l].clone());
                    l += 1;
                }
                std::cmp::Ordering::Greater => {
                    entries.push(right[r].clone());
                    r += 1;
                }
                std::cmp::Ordering::Equal => {
                    entries.push(right[r].clone());
                    l += 1;
                    r += 1;
                }
            }
        }
        entries.extend_from_slice(&left[l..]);
        entries.extend_from_slice(&right[r..]);
        Attrs::from_sorted(entries)
    }

    /// `sets[0] // sets[1] // ... // sets[n]` (`//` groups to the right, so a later
    /// set wins) in one pass: merged from the right into two buffers that trade
    /// places, not one set made per `//`.
    pub fn update_all(sets: &[&Attrs]) -> Attrs {
        let Some((last, rest)) = sets.split_last() else {
            return Attrs::new();
        };
        let total: usize = sets.iter().map(|set| set.len()).sum();
        let mut merged = Vec::with_capacity(total);
        merged.extend_from_slice(&last.entries);
        let mut spare = Vec::with_capacity(total);
        for set in rest.iter().rev() {
            merge_into(&set.entries, &mut merged, &mut spare);
            std::mem::swap(&mut merged, &mut spare);
        }
        Attrs::from_sorted(merged)
    }
}

/// `left // right` of sorted runs into `out` (emptied first), moving the winners
/// out of `right` (left empty) and cloning from `left`.
fn merge_into(left: &[Attr], right: &mut Vec<Attr>, out: &mut Vec<Attr>) {
    out.clear();
    let mut right_items = right.drain(..).peekable();
    let mut l = 0;
    while l < left.len() {
        let Some(next) = right_items.peek() else {
            break;
        };
        let order = left[l].name.cmp(&next.name);
        match order {
            std::cmp::Ordering::Less => {
                out.push(left[l].clone());
                l += 1;
            }
            std::cmp::Ordering::Greater => out.extend(right_items.next()),
            std::cmp::Ordering::Equal => {
                out.extend(right_items.next());
                l += 1;
            }
        }
    }
    out.extend_from_slice(&left[l..]);
    out.extend(right_items);
}

/// An environment frame: the values of one scope and the scope around it.
pub struct EnvFrame {
    pub parent: Option<Env>,
    pub slots: Slots,
}

pub type Env = Rc<EnvFrame>;

/// A frame's values. Filled once, right after the frame is made (recursive scopes
/// need the frame before their values exist); emptied only by
/// [`crate::eval::reclaim`], and only when nothing can reach the frame any more.
pub struct Slots {
    cells: RefCell<Cells>,
}

enum Cells {
    One(OnceCell<Value>),
    Many(Box<[OnceCell<Value>]>),
}

impl Slots {
    fn new(cells: Cells) -> Slots {
        Slots {
            cells: RefCell::new(cells),
        }
    }

    pub fn get(&self, index: usize) -> Option<std::cell::Ref<'_, Value>> {
        std::cell::Ref::filter_map(self.cells.try_borrow().ok()?, |cells| match cells {
            Cells::One(cell) if index == 0 => cell.get(),
            Cells::One(_) => None,
            Cells::Many(cells) => cells.get(index).and_then(OnceCell::get),
        })
        .ok()
    }

    pub fn set(&self, index: usize, value: Value) {
        // never borrowed while the frame is filled (nothing is evaluated in between)
        let Ok(cells) = self.cells.try_borrow() else {
            return;
        };
        let cell = match &*cells {
            Cells::One(cell) if index == 0 => Some(cell),
            Cells::One(_) => None,
            Cells::Many(cells) => cells.get(index),
        };
        if let Some(cell) = cell {
            let _ = cell.set(value);
        }
    }

    /// Every value, for a tracing pass.
    pub fn values(&self) -> Vec<Value> {
        let Ok(cells) = self.cells.try_borrow() else {
            return Vec::new();
        };
        match &*cells {
            Cells::One(cell) => cell.get().cloned().into_iter().collect(),
            Cells::Many(cells) => cells
                .iter()
                .filter_map(|cell| cell.get().cloned())
                .collect(),
        }
    }

    /// Takes every value out (see [`crate::eval::reclaim`]): the caller drops them.
    pub fn take(&self) -> Vec<Value> {
        let Ok(mut cells) = self.cells.try_borrow_mut() else {
            return Vec::new();
        };
        match &mut *cells {
            Cells::One(cell) => cell.take().into_iter().collect(),
            Cells::Many(cells) => cells.iter_mut().filter_map(OnceCell::take).collect(),
        }
    }
}

impl EnvFrame {
    pub fn one(parent: Option<Env>, value: Value) -> Env {
        Rc::new(EnvFrame {
            parent,
            slots: Slots::new(Cells::One(OnceCell::from(value))),
        })
    }

    pub fn empty(parent: Option<Env>, size: usize) -> Env {
        let slots = Slots::new(if size == 1 {
            Cells::One(OnceCell::new())
        } else {
            Cells::Many((0..size).map(|_| OnceCell::new()).collect())
        });
        Rc::new(EnvFrame { parent, slots })
    }
}

/// A function value: its code and the environment it closes over.
pub struct Closure {
    pub lambda: Rc<LambdaIr>,
    pub env: Env,
}

pub type PrimFn = fn(&mut crate::eval::Machine, &[Value], Span) -> EvalResult<Value>;

/// A built-in function taking `arity` arguments. Host functions (the mesh prelude)
/// are `Host` and may capture state.
pub struct PrimOp {
    pub name: &'static str,
    pub arity: usize,
    pub function: PrimFunction,
}

#[derive(Clone)]
pub enum PrimFunction {
    Builtin(PrimFn),
    Host(Rc<HostFn>),
}

pub type HostFn = dyn Fn(&mut crate::eval::Machine, &[Value], Span) -> EvalResult<Value>;

/// A built-in function applied to fewer arguments than it takes.
pub struct PrimOpApp {
    pub primop: Rc<PrimOp>,
    pub arguments: Vec<Value>,
}

/// A suspended computation, evaluated at most once.
pub struct Thunk {
    pub state: RefCell<ThunkState>,
}

/// Forced in place ([`crate::eval::Machine::force_thunk`]): while it is evaluated
/// the state stays what it was, mutably borrowed. No larger than a [`Value`]: the
/// code and frame of a suspended expression (most thunks) fit beside its tag, and
/// the elements that `genList`, `map`, `mapAttrs` and `zipAttrsWith` make share
/// one call, and any other application is boxed, so a thunk with its counts is 48
/// bytes, not the 96 it took with the applications inline.
pub enum ThunkState {
    /// Code to evaluate in an environment.
    Suspended {
        code: Rc<Ir>,
        env: Env,
    },
    /// Element `index` of a `genList`, `map`, `mapAttrs` or `zipAttrsWith`: the
    /// function, what it runs over and the call's span are shared by every element,
    /// so an element needs no allocation beyond its thunk.
    Generated {
        call: Rc<SharedCall>,
        index: i64,
    },
    /// A function applied to arguments.
    Apply(Box<Application>),
    /// Not yet given its value (`builtins.builtins` while the set is made):
    /// forcing it is infinite recursion.
    Blackhole,
    Done(Value),
}

/// The function of a `genList`, `map`, `mapAttrs` or `zipAttrsWith`, what it runs
/// over and where it was called, shared by the elements.
pub struct SharedCall {
    pub function: Value,
    pub over: Over,
    pub span: Span,
}

/// What the elements of a [`SharedCall`] apply its function to.
pub enum Over {
    /// `genList`: element `index` is `f index`.
    Indices,
    /// `map`: element `index` is `f list[index]`.
    List(List),
    /// `mapAttrs`: element `index` is `f name value` of the set's attribute `index`
    /// (in name order: the new set has the same names in the same order).
    Attrs(Attrs),
    /// `zipAttrsWith`: element `index` is `f name values` of group `index` (in name
    /// order, as the new set has them).
    Groups(Box<Groups>),
}

/// The groups of `zipAttrsWith`: every value of every group in one run, group
/// after group, each group's list made only when its element is forced (most of a
/// fold's groups never are: a list each was most of what such a fold kept).
pub struct Groups {
    pub values: Box<[Value]>,
    /// Each group's name and where its values start in `values` (they end where
    /// the next group's start).
    pub starts: Box<[(Name, usize)]>,
}

impl Groups {
    /// Group `index`: its name and a list of its values, made now. Not inlined:
    /// the evaluator's call path it is reached from stays as it was laid out.
    #[inline(never)]
    pub fn get(&self, index: usize) -> Option<(Name, List)> {
        let (name, start) = *self.starts.get(index)?;
        let end = self
            .starts
            .get(index + 1)
            .map_or(self.values.len(), |(_, next)| *next);
        Some((name, List::from(self.values.get(start..end)?)))
    }
}

/// A function applied to arguments, not yet called.
pub struct Application {
    pub function: Value,
    pub arguments: Vec<Value>,
    pub span: Span,
}

impl Thunk {
    pub fn suspended(code: Rc<Ir>, env: Env) -> Value {
        Value::Thunk(Rc::new(Thunk {
            state: RefCell::new(ThunkState::Suspended { code, env }),
        }))
    }

    pub fn apply(function: Value, arguments: Vec<Value>, span: Span) -> Value {
        Thunk::from_state(ThunkState::Apply(Box::new(Application {
            function,
            arguments,
            span,
        })))
    }

    /// Element `index` of `call` (see [`Over`]).
    pub fn generated(call: &Rc<SharedCall>, index: i64) -> Value {
        Thunk::from_state(ThunkState::Generated {
            call: call.clone(),
            index,
        })
    }

    fn from_state(state: ThunkState) -> Value {
        Value::Thunk(Rc::new(Thunk {
            state: RefCell::new(state),
        }))
    }

    /// The value, if already evaluated (a thunk being forced has none yet).
    pub fn value(&self) -> Option<Value> {
        match &*self.state.try_borrow().ok()? {
            ThunkState::Done(value) => Some(value.clone()),
            _ => None,
        }
    }
}

/// Two values are the same object (Nix's pointer equality of value slots).
pub fn same_object(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Thunk(l), Value::Thunk(r)) => Rc::ptr_eq(l, r),
        (Value::Attrs(l), Value::Attrs(r)) => Attrs::ptr_eq(l, r),
        (Value::List(l), Value::List(r)) => !l.is_empty() && List::ptr_eq(l, r),
        (Value::Lambda(l), Value::Lambda(r)) => Rc::ptr_eq(l, r),
        (Value::PrimOp(l), Value::PrimOp(r)) => Rc::ptr_eq(l, r),
        (Value::PrimOpApp(l), Value::PrimOpApp(r)) => Rc::ptr_eq(l, r),
        _ => false,
    }
}

/// Hashes addresses (already well spread) by multiplication, not SipHash: the
/// interned names below are keyed by a literal's address, the compiler's records of
/// the shapes it made by theirs.
#[derive(Default)]
pub struct AddressHasher(u64);

/// A `HashMap` hasher for keys that are addresses.
pub type AddressHash = std::hash::BuildHasherDefault<AddressHasher>;

impl std::hash::Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }

    fn write_usize(&mut self, value: usize) {
        self.0 = (self.0.rotate_left(5) ^ value as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    /// A value is two words: its tag and an integer, a float or one pointer (lists,
    /// strings and secrets are behind a thin pointer), so a list element, a frame
    /// slot and an attribute pay no more.
    #[test]
    fn a_value_is_two_words() {
        assert_eq!(std::mem::size_of::<super::Value>(), 2 * size_of::<usize>());
    }

    /// Most thunks are suspended code: their state (code and frame beside a tag)
    /// must stay three words (applications boxed), or every `let` binding and set
    /// attribute pays for the largest state.
    #[test]
    fn a_thunk_state_is_three_words() {
        assert!(size_of::<super::ThunkState>() <= 3 * size_of::<usize>());
        assert!(size_of::<super::Thunk>() <= 4 * size_of::<usize>());
    }

    proptest! {
        /// Attribute sets are sorted and searched with `compare_names`; `attrNames`,
        /// `toJSON` and printing promise Nix's byte order, which is `<[u8]>::cmp`.
        #[test]
        fn compare_names_is_byte_order(
            left in proptest::collection::vec(any::<u8>(), 0..12),
            right in proptest::collection::vec(any::<u8>(), 0..12),
        ) {
            prop_assert_eq!(super::compare_names(&left, &right), left.cmp(&right));
            prop_assert!(super::compare_names(&left, &left).is_eq());
        }

        /// `//` keeps every name once, in byte order, the right side's value where
        /// both have it, whichever way it merges (a few names over many, or not).
        #[test]
        fn update_is_a_merge_where_the_right_wins(
            left in proptest::collection::btree_set(proptest::collection::vec(97u8..100, 1..4), 0..60),
            right in proptest::collection::btree_set(proptest::collection::vec(97u8..100, 1..4), 0..12),
        ) {
            let make = |names: &std::collections::BTreeSet<Vec<u8>>, side: i64| {
                super::Attrs::from_sorted(names.iter().map(|name| super::Attr {
                    name: super::Name::new(&name[..]),
                    value: super::Value::Int(side),
                    span: None,
                }).collect())
            };
            let merged = make(&left, 0).update(&make(&right, 1));
            let mut expected: std::collections::BTreeMap<Vec<u8>, i64> =
                left.iter().map(|name| (name.clone(), 0)).collect();
            expected.extend(right.iter().map(|name| (name.clone(), 1)));
            let got: Vec<(Vec<u8>, i64)> = merged.iter().map(|attr| match attr.value {
                super::Value::Int(side) => (attr.name.to_vec(), side),
                _ => (attr.name.to_vec(), -1),
            }).collect();
            prop_assert_eq!(got, expected.into_iter().collect::<Vec<_>>());
        }

        /// A chain `a // b // c ...` merged at once is the chain merged one `//` at
        /// a time: the same names in order, the value of the last set having each.
        #[test]
        fn update_all_is_a_chain_of_updates(
            sets in proptest::collection::vec(
                proptest::collection::btree_set(proptest::collection::vec(97u8..100, 1..3), 0..10),
                1..6,
            ),
        ) {
            let made: Vec<super::Attrs> = sets.iter().enumerate().map(|(side, names)| {
                super::Attrs::from_sorted(names.iter().map(|name| super::Attr {
                    name: super::Name::new(&name[..]),
                    value: super::Value::Int(side as i64),
                    span: None,
                }).collect())
            }).collect();
            let one_by_one = made.iter().rev().skip(1).fold(made[made.len() - 1].clone(), |acc, set| set.update(&acc));
            let refs: Vec<&super::Attrs> = made.iter().collect();
            let at_once = super::Attrs::update_all(&refs);
            let view = |attrs: &super::Attrs| -> Vec<(Vec<u8>, i64)> {
                attrs.iter().map(|attr| match attr.value {
                    super::Value::Int(side) => (attr.name.to_vec(), side),
                    _ => (attr.name.to_vec(), -1),
                }).collect()
            };
            prop_assert_eq!(view(&at_once), view(&one_by_one));
        }
    }
}
