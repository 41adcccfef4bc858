//! The order in which Nix 2.8 would have created each name's symbol. Nix fills the
//! slots of a `let`, a `rec` set and a function's formals in symbol order, and a
//! symbol's order is its address: in practice the order of creation, with the
//! symbols Nix creates at start-up before (or, for the names in its bundled
//! `derivation.nix`, after) every name a program brings. A binding that refers to a
//! name whose slot is not filled yet gets a thunk of its own instead of sharing the
//! value, and that decides where a small list prints as `«repeated»`.
//! This module only ranks names; it evaluates nothing.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::syntax::{AttrName, Binding, Expr, ExprKind, Param, StringPart};

/// Symbols Nix 2.8 creates at start-up, in the order of their addresses (measured
/// against nix-instantiate 2.8.0: these come before every symbol a program creates).
const STARTUP_LOW: &[&str] = &[
    "meta",
    "name",
    "value",
    "system",
    "outputs",
    "outputName",
    "file",
    "line",
    "column",
    "outPath",
    "drvPath",
    "type",
    "right",
    "wrong",
    "builder",
    "args",
    "description",
    "self",
    "startSet",
    "operator",
    "key",
    "path",
    "prefix",
    "builtins",
    // Nix's base environment binds these right after `builtins` (primops.cc)
    "true",
    "false",
    "null",
    "currentTime",
    "currentSystem",
    "nixVersion",
    "storeDir",
    "langVersion",
    "nixPath",
    "scopedImport",
    "import",
    "typeOf",
    "isNull",
    "isFunction",
    "isInt",
    "isFloat",
    "isString",
    "isBool",
    "isPath",
    "genericClosure",
    "abort",
    "throw",
    "addErrorContext",
    "ceil",
    "floor",
    "tryEval",
    "getEnv",
    "seq",
    "deepSeq",
    "trace",
    "derivationStrict",
    "placeholder",
    "toPath",
    "storePath",
    "pathExists",
    "baseNameOf",
    "dirOf",
    "readFile",
    "findFile",
    "hashFile",
    "readDir",
    "toXML",
    "toJSON",
    "fromJSON",
    "toFile",
    "filterSource",
    "attrNames",
    "attrValues",
    "getAttr",
    "unsafeGetAttrPos",
    "hasAttr",
    "isAttrs",
    "removeAttrs",
    "listToAttrs",
    "intersectAttrs",
    "catAttrs",
    "functionArgs",
    "mapAttrs",
    "zipAttrsWith",
    "isList",
    "elemAt",
    "head",
    "tail",
    "map",
    "filter",
    "elem",
    "concatLists",
    "length",
    "any",
    "all",
    "genList",
    "sort",
    "partition",
    "groupBy",
    "concatMap",
    "add",
    "sub",
    "mul",
    "div",
    "bitAnd",
    "bitOr",
    "bitXor",
    "lessThan",
    "toString",
    "substring",
    "stringLength",
    "hashString",
    "match",
    "split",
    "concatStringsSep",
    "replaceStrings",
    "parseDrvName",
    "compareVersions",
    "splitVersion",
    "unsafeDiscardStringContext",
    "hasContext",
    "unsafeDiscardOutputDependency",
    "getContext",
    "appendContext",
    "fetchMercurial",
    "fetchTree",
    "fetchurl",
    "fetchTarball",
    "fetchGit",
    "fromTOML",
    "derivation",
];

/// Symbols of Nix 2.8's bundled `derivation.nix`, parsed at start-up: their
/// addresses come after every symbol a (small) program creates.
const STARTUP_HIGH: &[&str] = &[
    "strict",
    "drvAttrs",
    "commonAttrs",
    "outputsList",
    "x",
    "outputToAttrListElement",
];

const HIGH_BASE: u64 = 1 << 48;

/// rustc's Fx hash (a rotate, a xor and a multiply per eight bytes) for the names
/// of a program: they are short and hashed once per mention in the compiler, where
/// SipHash's setup costs more than the name. Not for keys an adversary picks to
/// collide; a name table is the program's own text.
#[derive(Clone, Copy, Default)]
pub(crate) struct NameHasher(u64);

const FX_SEED: u64 = 0xf135_7aea_2e62_a9c5;

impl NameHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for NameHasher {
    #[inline]
    fn finish(&self) -> u64 {
        // the multiply carries a byte's bits only upwards, so names that differ in
        // the high bytes of a word (`node00017`, `node00018`) differ only in the
        // high bits; hash tables index by the low bits and tag by the top seven:
        // fold the high half down, multiply once more, and bring the well-mixed
        // high bits to where the tables look
        let folded = self.0 ^ (self.0 >> 32);
        folded.wrapping_mul(FX_SEED).rotate_left(26)
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(
                <[u8; 8]>::try_from(chunk).unwrap_or_default(),
            ));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = 0u64;
            for (index, byte) in rest.iter().enumerate() {
                word |= u64::from(*byte) << (8 * index);
            }
            self.add(word);
        }
    }

    #[inline]
    fn write_u8(&mut self, value: u8) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u32(&mut self, value: u32) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    #[inline]
    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }
}

/// The names of a parsed file, each once, in the order [`SymbolOrder::intern_file`]
/// meets them first: what a file parsed once (and kept by the parse cache) gives
/// every evaluator that interns it ([`SymbolOrder::intern_names`]).
pub fn first_mentions(expr: &Expr) -> Box<[crate::name::Name]> {
    let mut seen = SymbolOrder {
        ranks: NameMap::default(),
        next: 0,
    };
    seen.intern_file(expr);
    // the ranks are 0, 1, 2 and on: each name goes to its place
    let mut names = vec![None; seen.ranks.len()];
    for (name, rank) in seen.ranks {
        if let Some(place) = usize::try_from(rank)
            .ok()
            .and_then(|rank| names.get_mut(rank))
        {
            *place = Some(name);
        }
    }
    names.into_iter().flatten().collect()
}

/// A map keyed by names, hashed with [`NameHasher`].
pub(crate) type NameMap<V> = HashMap<crate::name::Name, V, BuildHasherDefault<NameHasher>>;

/// Ranks of the names seen so far, shared by every file of one evaluation.
#[derive(Debug, Clone)]
pub struct SymbolOrder {
    ranks: NameMap<u64>,
    next: u64,
}

impl Default for SymbolOrder {
    fn default() -> SymbolOrder {
        SymbolOrder::new()
    }
}

impl SymbolOrder {
    pub fn new() -> SymbolOrder {
        // room for the start-up symbols and a small program's names
        let mut ranks = NameMap::with_capacity_and_hasher(1024, BuildHasherDefault::default());
        for (index, name) in STARTUP_LOW.iter().enumerate() {
            ranks.insert(crate::name::Name::new(name.as_bytes()), index as u64);
        }
        for (index, name) in STARTUP_HIGH.iter().enumerate() {
            ranks.insert(
                crate::name::Name::new(name.as_bytes()),
                HIGH_BASE + index as u64,
            );
        }
        SymbolOrder {
            ranks,
            next: STARTUP_LOW.len() as u64,
        }
    }

    /// Creates the symbol `name` if it is new.
    pub fn intern(&mut self, name: &[u8]) {
        if !self.ranks.contains_key(name) {
            self.intern_name(crate::name::Name::new(name));
        }
    }

    /// Creates the symbol of the interned `name` if it is new.
    fn intern_name(&mut self, name: crate::name::Name) {
        if let std::collections::hash_map::Entry::Vacant(vacant) = self.ranks.entry(name) {
            vacant.insert(self.next);
            self.next += 1;
        }
    }

    /// The rank of `name`; a name never interned ranks after all others.
    pub fn rank(&self, name: &[u8]) -> u64 {
        self.ranks.get(name).copied().unwrap_or(u64::MAX)
    }

    /// Interns every name of a parsed file in the order Nix 2.8's parser creates
    /// them: as its grammar actions run, so a function's parameter after its body and
    /// a formal after its default.
    pub fn intern_file(&mut self, expr: &Expr) {
        self.expr(expr);
    }

    /// Interns `names` in order: given a file's [`first_mentions`], ranks every
    /// name as [`SymbolOrder::intern_file`] of that file does, with one lookup a
    /// name instead of one a mention (a 2 MB inventory mentions 300,000 names,
    /// 10,000 of them different).
    pub fn intern_names(&mut self, names: &[crate::name::Name]) {
        for name in names {
            self.intern_name(*name);
        }
    }

    fn attr_path(&mut self, path: &[AttrName]) {
        for name in path {
            match name {
                AttrName::Static { name, .. } => self.intern(name),
                AttrName::Dynamic(expr) => self.expr(expr),
            }
        }
    }

    fn parts(&mut self, parts: &[StringPart]) {
        for part in parts {
            if let StringPart::Interpolation(expr) = part {
                self.expr(expr);
            }
        }
    }

    fn bindings(&mut self, bindings: &[Binding]) {
        for binding in bindings {
            match binding {
                Binding::Assign { path, value, .. } => {
                    self.attr_path(path);
                    self.expr(value);
                }
                Binding::Inherit { from, names, .. } => {
                    if let Some(from) = from {
                        self.expr(from);
                    }
                    self.attr_path(names);
                }
            }
        }
    }

    fn expr(&mut self, expr: &Expr) {
        match &expr.kind {
            ExprKind::Integer(_) | ExprKind::Float(_) | ExprKind::Uri(_) | ExprKind::Error => {}
            ExprKind::String(parts) | ExprKind::Path(parts) => self.parts(parts),
            // `__curPos` is a position to Nix's parser, not a symbol
            ExprKind::Variable(name) if name == "__curPos" => {}
            ExprKind::Variable(name) => self.intern(name.as_bytes()),
            ExprKind::Select {
                expr,
                path,
                default,
            } => {
                self.expr(expr);
                self.attr_path(path);
                if let Some(default) = default {
                    self.expr(default);
                }
            }
            ExprKind::HasAttr { expr, path } => {
                self.expr(expr);
                self.attr_path(path);
            }
            ExprKind::Attrs { bindings, .. } => self.bindings(bindings),
            ExprKind::List(items) => {
                for item in items {
                    self.expr(item);
                }
            }
            ExprKind::Let { bindings, body } => {
                self.bindings(bindings);
                self.expr(body);
            }
            ExprKind::LegacyLet { bindings } => {
                self.bindings(bindings);
                self.intern(b"body");
            }
            ExprKind::With { namespace, body } => {
                self.expr(namespace);
                self.expr(body);
            }
            ExprKind::If {
                condition,
                then,
                otherwise,
            } => {
                self.expr(condition);
                self.expr(then);
                self.expr(otherwise);
            }
            ExprKind::Assert { condition, body } => {
                self.expr(condition);
                self.expr(body);
            }
            ExprKind::Lambda { param, body } => match &**param {
                Param::Identifier { name, .. } => {
                    self.expr(body);
                    self.intern(name.as_bytes());
                }
                Param::Formals { formals, at, .. } => {
                    for formal in formals {
                        if let Some(default) = &formal.default {
                            self.expr(default);
                        }
                        self.intern(formal.name.as_bytes());
                    }
                    self.expr(body);
                    if let Some((name, _)) = at {
                        self.intern(name.as_bytes());
                    }
                }
            },
            ExprKind::Apply {
                function,
                arguments,
            } => {
                self.expr(function);
                for argument in arguments {
                    self.expr(argument);
                }
            }
            ExprKind::Unary { expr, .. } => self.expr(expr),
            ExprKind::Binary { left, right, .. } => {
                self.expr(left);
                self.expr(right);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse;
    use crate::span::FileId;

    /// Every byte of a name counts, the tail past the last eight included: names
    /// that differ only there must not share a hash (they would share a bucket).
    #[test]
    fn name_hashes_differ_in_every_byte() {
        use std::hash::BuildHasher;
        let hasher = BuildHasherDefault::<NameHasher>::default();
        let mut hashes = std::collections::HashSet::new();
        let mut count = 0;
        for length in 1..20 {
            for last in 0..=255u8 {
                let mut name = vec![b'a'; length];
                name[length - 1] = last;
                hashes.insert(hasher.hash_one(&name[..]));
                count += 1;
            }
        }
        assert_eq!(hashes.len(), count);
    }

    /// Interning a file's first mentions ranks every name as interning the file
    /// does, after files before it as well as on its own.
    #[test]
    fn first_mentions_rank_names_as_the_file_does() {
        let files = crate::test_files::repository_nix_files();
        crate::eval::run_with_stack(move || {
            let mut whole = SymbolOrder::new();
            let mut listed = SymbolOrder::new();
            for file in &files {
                let source = std::fs::read(file).unwrap();
                let parsed = crate::parser::parse(&source, crate::span::FileId(0));
                whole.intern_file(&parsed.expr);
                listed.intern_names(&first_mentions(&parsed.expr));
                assert_eq!(whole.next, listed.next, "{}", file.display());
                let mut alone = SymbolOrder::new();
                alone.intern_names(&first_mentions(&parsed.expr));
                let mut walked = SymbolOrder::new();
                walked.intern_file(&parsed.expr);
                assert_eq!(alone.ranks, walked.ranks, "{}", file.display());
            }
            assert_eq!(whole.ranks, listed.ranks);
            assert!(whole.next > 500, "{} names", whole.next);
        })
        .expect("an evaluation thread");
    }

    #[test]
    fn names_rank_in_creation_order_after_startup_symbols() {
        let mut order = SymbolOrder::new();
        let parsed = parse(b"let b = [ 1 2 ]; a = q: b; in a", FileId(0));
        order.intern_file(&parsed.expr);
        assert!(order.rank(b"name") < order.rank(b"b"));
        // a binding's name is created before its value, a parameter after its body
        assert!(order.rank(b"b") < order.rank(b"a"));
        assert!(order.rank(b"a") < order.rank(b"q"));
        assert!(order.rank(b"q") < order.rank(b"x"));
    }

    /// Names that differ only in the high bytes of a word (`node00017`,
    /// `node04018`: a fleet's node names) spread over a table's buckets and
    /// tags as random hashes would; the multiply alone moves those bytes only
    /// into the high bits, and such names once took fifteen comparisons each.
    #[test]
    fn similar_names_spread_over_buckets_and_tags() {
        use std::hash::BuildHasher;
        let hasher = BuildHasherDefault::<NameHasher>::default();
        let names: Vec<Vec<u8>> = (0..10_000)
            .map(|index| format!("node{index:05}").into_bytes())
            .collect();
        let hashes: Vec<u64> = names
            .iter()
            .map(|name| hasher.hash_one(&name[..]))
            .collect();
        // 10,000 random hashes over 16,384 buckets fill about 7,870 of them
        let buckets: std::collections::HashSet<u64> =
            hashes.iter().map(|hash| hash & 0x3fff).collect();
        assert!(buckets.len() > 7_000, "{} buckets", buckets.len());
        // and the seven bits of a tag: every value, about equally often
        let mut tags = [0usize; 128];
        for hash in &hashes {
            tags[(hash >> 57) as usize] += 1;
        }
        let (fewest, most) = (tags.iter().min(), tags.iter().max());
        assert!(
            fewest.is_some_and(|n| *n > 40) && most.is_some_and(|n| *n < 120),
            "tags from {fewest:?} to {most:?} names"
        );
    }
}
