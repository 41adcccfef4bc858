//! The evaluator's code: the IR the compiler lowers the syntax tree to. Every
//! variable is already resolved to a frame distance and slot, a `with` lookup or a
//! constant; nested attribute paths are merged; nothing here refers to syntax.

use std::rc::Rc;

use crate::name::Name;
use crate::span::Span;
use crate::value::Value;

#[derive(Debug)]
pub struct Ir {
    pub kind: IrKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    And,
    Or,
    Implies,
    Equal,
    NotEqual,
    Less,
    Update,
    Add,
    Subtract,
    Multiply,
    Divide,
    Concat,
}

#[derive(Debug)]
pub enum IrKind {
    Const(Value),
    /// A lexical variable: `up` frames out, slot `slot`.
    Var {
        up: u32,
        slot: u32,
    },
    /// A name looked up in the enclosing `with` namespaces (frame distances,
    /// innermost first).
    WithVar {
        name: Name,
        withs: Box<[u32]>,
    },
    Select {
        expr: Rc<Ir>,
        path: Box<[IrAttrName]>,
        default: Option<Rc<Ir>>,
    },
    HasAttr {
        expr: Rc<Ir>,
        path: Box<[IrAttrName]>,
    },
    Attrs(Rc<AttrsIr>),
    List(Box<[Rc<Ir>]>),
    /// Makes a frame holding `bindings`, then evaluates `body` in it.
    Let {
        bindings: Box<[BindingIr]>,
        /// The slots in the order Nix fills them (symbol order, see [`SymbolOrder`]).
        order: Box<[u32]>,
        body: Rc<Ir>,
    },
    With {
        namespace: Rc<Ir>,
        body: Rc<Ir>,
    },
    If {
        condition: Rc<Ir>,
        then: Rc<Ir>,
        otherwise: Rc<Ir>,
    },
    Assert {
        condition: Rc<Ir>,
        body: Rc<Ir>,
    },
    Lambda(Rc<LambdaIr>),
    Call {
        function: Rc<Ir>,
        arguments: Box<[Rc<Ir>]>,
    },
    Not(Rc<Ir>),
    Binary {
        op: Operator,
        left: Rc<Ir>,
        right: Rc<Ir>,
    },
    /// `"a${b}c"`: every part coerced to a string.
    Interpolate(Box<[Rc<Ir>]>),
    /// `./a/${b}`: the first part is a path, the rest are appended.
    PathConcat(Box<[Rc<Ir>]>),
    /// `__curPos`: where it is written, as `{ column; file; line; }`.
    CurrentPosition,
    /// Plain data lowered when first evaluated (see `deferred`).
    Deferred(Rc<super::DeferredIr>),
}

#[derive(Debug)]
pub enum IrAttrName {
    Static(Name),
    Dynamic(Rc<Ir>),
}

#[derive(Debug)]
pub struct BindingIr {
    pub value: Rc<Ir>,
    /// `inherit x;` is looked up in the scope around a `let` or `rec`, not inside it.
    pub outer: bool,
}

#[derive(Debug)]
pub struct StaticAttrIr {
    pub name: Name,
    pub value: Rc<Ir>,
    pub span: Span,
    pub outer: bool,
}

#[derive(Debug)]
pub struct DynamicAttrIr {
    pub name: Rc<Ir>,
    pub value: Rc<Ir>,
    pub span: Span,
}

#[derive(Debug)]
pub struct AttrsIr {
    /// A `rec` set makes a frame holding its static attributes.
    pub recursive: bool,
    /// Sorted by name.
    pub statics: Box<[StaticAttrIr]>,
    /// The statics in the order a `rec` set fills its frame (symbol order); empty
    /// when the set is not recursive.
    pub order: Box<[u32]>,
    pub dynamics: Box<[DynamicAttrIr]>,
}

#[derive(Debug)]
pub struct FormalIr {
    pub name: Name,
    pub span: Span,
    pub default: Option<Rc<Ir>>,
}

#[derive(Debug)]
pub enum ParamIr {
    Identifier,
    Formals {
        formals: Box<[FormalIr]>,
        ellipsis: bool,
        /// `@ name` lives in the slot after the formals.
        at: bool,
        /// The formals in the order Nix fills their slots (symbol order).
        order: Box<[u32]>,
    },
}

#[derive(Debug)]
pub struct LambdaIr {
    pub name: Option<Name>,
    /// `x` of `x: body`, or `args` of `{ ... }@args: body` (for `toXML`).
    pub parameter_name: Option<Name>,
    pub param: ParamIr,
    pub body: Rc<Ir>,
    pub span: Span,
    pub frame_size: usize,
}
