//! The syntax tree the parser builds: every node carries the byte span it was parsed
//! from. It is a faithful picture of the source; no names are resolved here.

use crate::span::Span;

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Implies,
    Or,
    And,
    Equal,
    NotEqual,
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
    Update,
    Add,
    Subtract,
    Multiply,
    Divide,
    Concat,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Implies => "->",
            BinaryOp::Or => "||",
            BinaryOp::And => "&&",
            BinaryOp::Equal => "==",
            BinaryOp::NotEqual => "!=",
            BinaryOp::Less => "<",
            BinaryOp::LessEqual => "<=",
            BinaryOp::Greater => ">",
            BinaryOp::GreaterEqual => ">=",
            BinaryOp::Update => "//",
            BinaryOp::Add => "+",
            BinaryOp::Subtract => "-",
            BinaryOp::Multiply => "*",
            BinaryOp::Divide => "/",
            BinaryOp::Concat => "++",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Not,
    Negate,
}

/// The pieces of a string or path. Most strings are one literal, held inline: an
/// inventory's 90,000 strings allocated a list of one piece each.
pub type StringParts = smallvec::SmallVec<[StringPart; 1]>;

/// One piece of a string or path: literal bytes or an interpolated expression.
#[derive(Clone, Debug, PartialEq)]
pub enum StringPart {
    Literal(Vec<u8>),
    Interpolation(Box<Expr>),
}

/// One element of an attribute path: `a`, `"a b"`, `${e}`.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrName {
    Static { name: Vec<u8>, span: Span },
    Dynamic(Box<Expr>),
}

impl AttrName {
    pub fn span(&self) -> Span {
        match self {
            AttrName::Static { span, .. } => *span,
            AttrName::Dynamic(expr) => expr.span,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Binding {
    /// `a.b.c = value;`
    Assign {
        path: Vec<AttrName>,
        value: Expr,
        span: Span,
    },
    /// `inherit a b;` or `inherit (from) a b;`
    Inherit {
        from: Option<Box<Expr>>,
        names: Vec<AttrName>,
        span: Span,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Formal {
    pub name: String,
    pub span: Span,
    pub default: Option<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    /// `x: body`
    Identifier { name: String, span: Span },
    /// `{ a, b ? 1, ... } @ all: body`
    Formals {
        formals: Vec<Formal>,
        ellipsis: bool,
        at: Option<(String, Span)>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Integer(i64),
    Float(f64),
    /// A string: `"..."` or `''...''` after indentation stripping.
    String(StringParts),
    /// A path literal as written (`./a`, `../b/${x}`), resolved against the file later.
    Path(StringParts),
    Uri(String),
    Variable(String),
    Select {
        expr: Box<Expr>,
        path: Vec<AttrName>,
        default: Option<Box<Expr>>,
    },
    HasAttr {
        expr: Box<Expr>,
        path: Vec<AttrName>,
    },
    Attrs {
        recursive: bool,
        bindings: Vec<Binding>,
    },
    List(Vec<Expr>),
    Let {
        bindings: Vec<Binding>,
        body: Box<Expr>,
    },
    /// The old `let { ...; body = ...; }` form.
    LegacyLet {
        bindings: Vec<Binding>,
    },
    With {
        namespace: Box<Expr>,
        body: Box<Expr>,
    },
    If {
        condition: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
    Assert {
        condition: Box<Expr>,
        body: Box<Expr>,
    },
    Lambda {
        /// Boxed: a `Param` is 72 bytes, and every `Expr` would be as large.
        param: Box<Param>,
        body: Box<Expr>,
    },
    Apply {
        function: Box<Expr>,
        arguments: Vec<Expr>,
    },
    Unary {
        op: UnaryOp,
        expr: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        op_span: Span,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// Where the parser recovered from an error.
    Error,
}

#[cfg(test)]
mod tests {
    use super::{Binding, Expr};

    /// A large file's tree is most of its parse's memory: a variant that grows an
    /// `Expr` past 64 bytes (as an unboxed `Param` made it 96) grows every node.
    #[test]
    fn a_tree_node_stays_small() {
        assert!(
            std::mem::size_of::<Expr>() <= 64,
            "{}",
            std::mem::size_of::<Expr>()
        );
        assert!(
            std::mem::size_of::<Binding>() <= 104,
            "{}",
            std::mem::size_of::<Binding>()
        );
    }
}
