//! Attribute sets and `let`: bindings merged as Nix's parser merges them
//! (`a.b = 1; a.c = 2;` is one nested set), duplicates reported, `rec` and `let`
//! frames filled in symbol order.

use super::*;

/// An attribute set (or `let`) while its bindings are merged, before compilation.
pub(super) struct SetBuilder<'e> {
    pub(super) recursive: bool,
    pub(super) statics: Statics<'e>,
    pub(super) dynamics: Vec<(&'e Expr, Entry<'e>, Span)>,
}

impl<'e> SetBuilder<'e> {
    pub(super) fn new(recursive: bool) -> SetBuilder<'e> {
        SetBuilder {
            recursive,
            statics: Statics::default(),
            dynamics: Vec::new(),
        }
    }
}

/// A set's static attributes while its bindings are merged, in the order first
/// written, each name once: found by a scan while there are few; past that, by a
/// binary search while they were written in name order (an inventory's nodes, a
/// generated file), by an index once one was not. [`Statics::into_sorted`] gives
/// them in name order, their slots' order.
#[derive(Default)]
pub(super) struct Statics<'e> {
    entries: Vec<(Name, Entry<'e>)>,
    /// Every name's position once there are more than [`SCANNED`] and they are
    /// not in name order; empty before.
    index: NameMap<usize>,
    /// Whether a name came before one written earlier: then `index` is kept.
    unordered: bool,
}

/// Up to this many attributes a set is searched by a scan.
const SCANNED: usize = 8;

impl<'e> Statics<'e> {
    fn position(&self, name: &Name) -> Option<usize> {
        if self.entries.len() <= SCANNED {
            // the compiler's names are interned: the same name is mostly the same copy
            self.entries.iter().position(|(key, _)| key.same(*name))
        } else if self.unordered {
            self.index.get(name).copied()
        } else if self.entries.last().is_some_and(|(last, _)| last < name) {
            // the common case of names in order: a new name comes after the last
            None
        } else {
            self.entries.binary_search_by(|(key, _)| key.cmp(name)).ok()
        }
    }

    pub(super) fn get(&self, name: &Name) -> Option<&Entry<'e>> {
        let position = self.position(name)?;
        self.entries.get(position).map(|(_, entry)| entry)
    }

    pub(super) fn get_mut(&mut self, name: &Name) -> Option<&mut Entry<'e>> {
        let position = self.position(name)?;
        self.entries.get_mut(position).map(|(_, entry)| entry)
    }

    /// Room for `more` names (a set's bindings, which name at most as many).
    pub(super) fn reserve(&mut self, more: usize) {
        self.entries.reserve(more);
    }

    /// Adds `name`, which is not there yet.
    pub(super) fn insert(&mut self, name: Name, entry: Entry<'e>) {
        let position = self.entries.len();
        if !self.unordered && self.entries.last().is_some_and(|(last, _)| *last > name) {
            self.unordered = true;
        }
        if self.unordered && position >= SCANNED {
            if self.index.len() < position {
                for (earlier, (key, _)) in self.entries.iter().enumerate() {
                    self.index.insert(*key, earlier);
                }
            }
            self.index.insert(name, position);
        }
        self.entries.push((name, entry));
    }

    pub(super) fn get_or_insert_with(
        &mut self,
        name: Name,
        make: impl FnOnce() -> Entry<'e>,
    ) -> &mut Entry<'e> {
        let position = match self.position(&name) {
            Some(position) => position,
            None => {
                self.insert(name, make());
                self.entries.len() - 1
            }
        };
        &mut self.entries[position].1
    }

    /// The attributes sorted by name (names are unique).
    pub(super) fn into_sorted(self) -> Vec<(Name, Entry<'e>)> {
        let mut entries = self.entries;
        if self.unordered {
            entries.sort_unstable_by_key(|(left, _)| *left);
        }
        entries
    }
}

pub(super) enum Entry<'e> {
    Value {
        expr: &'e Expr,
        span: Span,
    },
    /// Boxed: an entry is 32 bytes instead of 112, and a set of 10,000 plain
    /// entries (an inventory's nodes) has none.
    Nested {
        set: Box<SetBuilder<'e>>,
        span: Span,
    },
    Inherited {
        from: Option<&'e Expr>,
        name: Name,
        span: Span,
    },
    /// A set literal of plain data on the spine, lowered when first evaluated
    /// (see `deferred`); merged into as [`Entry::Value`] would be.
    Deferred {
        expr: &'e Expr,
        span: Span,
    },
}

impl Entry<'_> {
    fn span(&self) -> Span {
        match self {
            Entry::Value { span, .. }
            | Entry::Deferred { span, .. }
            | Entry::Nested { span, .. }
            | Entry::Inherited { span, .. } => *span,
        }
    }
}

/// Slot indices sorted by the symbol order of their names (ties keep slot order).
pub(super) fn fill_order<'n>(
    symbols: &SymbolOrder,
    names: impl Iterator<Item = &'n [u8]>,
) -> Box<[u32]> {
    let mut ranked: Vec<(u64, u32)> = names
        .enumerate()
        .map(|(slot, name)| (symbols.rank(name), slot as u32))
        .collect();
    ranked.sort();
    ranked.into_iter().map(|(_, slot)| slot).collect()
}

impl Compiler<'_> {
    pub(super) fn attr_path(&mut self, path: &[AttrName]) -> Box<[IrAttrName]> {
        path.iter()
            .map(|name| match name {
                AttrName::Static { name, .. } => IrAttrName::Static(crate::name::Name::new(name)),
                AttrName::Dynamic(expr) => {
                    IrAttrName::Dynamic(self.off_spine(|compiler| compiler.expr(expr)))
                }
            })
            .collect()
    }

    pub(super) fn duplicate(&mut self, name: &[u8], first: Span, second: Span) {
        self.error(
            Diagnostic::error(
                codes::DUPLICATE_ATTRIBUTE,
                format!("attribute `{}` is defined twice", name_text(name)),
            )
            .with_primary(second, "defined again here")
            .with_secondary(first, "first defined here")
            .with_help("remove one of the definitions, or merge them into one attribute set"),
        );
    }

    /// Adds bindings to a set the way Nix's parser does (`addAttr`): `a.b = 1; a.c = 2;`
    /// builds one nested set, and two attribute-set literals for one name merge.
    pub(super) fn add_bindings<'e>(
        &mut self,
        set: &mut SetBuilder<'e>,
        bindings: &'e [Binding],
        in_let: bool,
    ) {
        set.statics.reserve(bindings.len());
        for binding in bindings {
            match binding {
                Binding::Assign { path, value, span } => {
                    self.add_assignment(set, path, value, *span, in_let);
                }
                Binding::Inherit { from, names, .. } => {
                    for name in names {
                        match name {
                            AttrName::Static { name, span } => {
                                let key = Name::new(name);
                                if let Some(existing) = set.statics.get(&key) {
                                    let first = existing.span();
                                    self.duplicate(name, first, *span);
                                    continue;
                                }
                                set.statics.insert(
                                    key,
                                    Entry::Inherited {
                                        from: from.as_deref(),
                                        name: key,
                                        span: *span,
                                    },
                                );
                            }
                            AttrName::Dynamic(expr) => {
                                self.error(
                                    Diagnostic::error(
                                        codes::DYNAMIC_ATTRIBUTE_NOT_ALLOWED,
                                        "dynamic attributes are not allowed in `inherit`",
                                    )
                                    .with_primary(expr.span, "a name computed at evaluation time")
                                    .with_help("write the name out, or use `name = expr;` instead of `inherit`"),
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    pub(super) fn add_assignment<'e>(
        &mut self,
        set: &mut SetBuilder<'e>,
        path: &'e [AttrName],
        value: &'e Expr,
        span: Span,
        in_let: bool,
    ) {
        let Some((last, prefix)) = path.split_last() else {
            return;
        };
        // a value merged into a `rec` set (`a = rec { true = 1; }; a.b = { ... };`)
        // is in that set's scope, which is not pushed yet: it is off the spine, so
        // that it is never taken for plain data where a name of the set binds
        // `true`, `false` or `null`
        let spine = self.spine;
        let mut recursive = set.recursive;
        let mut current = set;
        for name in prefix {
            match name {
                AttrName::Static {
                    name,
                    span: name_span,
                } => {
                    let key = Name::new(name);
                    let entry = current.statics.get_or_insert_with(key, || Entry::Nested {
                        set: Box::new(SetBuilder::new(false)),
                        span: *name_span,
                    });
                    self.nest_literal(entry);
                    match entry {
                        Entry::Nested { set, .. } => {
                            current = set.as_mut();
                            recursive |= current.recursive;
                        }
                        other => {
                            let first = other.span();
                            self.duplicate(name, first, *name_span);
                            return;
                        }
                    }
                }
                AttrName::Dynamic(expr) => {
                    if in_let {
                        self.dynamic_in_let(expr.span);
                        return;
                    }
                    current.dynamics.push((
                        expr,
                        Entry::Nested {
                            set: Box::new(SetBuilder::new(false)),
                            span,
                        },
                        span,
                    ));
                    let Some((_, Entry::Nested { set, .. }, _)) = current.dynamics.last_mut()
                    else {
                        return;
                    };
                    current = set.as_mut();
                }
            }
        }
        if recursive {
            self.spine = false;
        }
        self.add_last(current, last, value, span, in_let);
        self.spine = spine;
    }

    /// The last name of an assignment's path, bound in `current` to `value`.
    fn add_last<'e>(
        &mut self,
        current: &mut SetBuilder<'e>,
        last: &'e AttrName,
        value: &'e Expr,
        span: Span,
        in_let: bool,
    ) {
        match last {
            AttrName::Static {
                name,
                span: name_span,
            } => {
                let key = Name::new(name);
                self.binding_names.push((value.span, key));
                match current.statics.get_mut(&key) {
                    None => {
                        let entry = match &value.kind {
                            ExprKind::Attrs { .. } if self.deferrable(value) => Entry::Deferred {
                                expr: value,
                                span: *name_span,
                            },
                            ExprKind::Attrs {
                                recursive,
                                bindings,
                            } => {
                                // attribute-set literals stay mergeable with later paths
                                let mut nested = SetBuilder::new(*recursive);
                                self.add_literal(&mut nested, bindings);
                                Entry::Nested {
                                    set: Box::new(nested),
                                    span: *name_span,
                                }
                            }
                            _ => Entry::Value {
                                expr: value,
                                span: *name_span,
                            },
                        };
                        current.statics.insert(key, entry);
                    }
                    Some(existing) => {
                        let mergeable = matches!(
                            existing,
                            Entry::Nested { .. } | Entry::Deferred { .. }
                        ) || matches!(existing, Entry::Value { expr, .. } if matches!(expr.kind, ExprKind::Attrs { .. }));
                        let existing_span = existing.span();
                        match (&value.kind, mergeable) {
                            (ExprKind::Attrs { bindings, .. }, true) => {
                                self.nest_literal(existing);
                                if let Entry::Nested { set: nested, .. } = existing {
                                    // later Nix merges dynamic attributes too; 2.8 dropped them
                                    let mut incoming = SetBuilder::new(false);
                                    // merged into a `rec` set: in its scope, off the spine
                                    if nested.recursive {
                                        self.off_spine(|compiler| {
                                            compiler.add_bindings(&mut incoming, bindings, false)
                                        });
                                    } else {
                                        self.add_bindings(&mut incoming, bindings, false);
                                    }
                                    let repeated = self.merge_sets(nested, incoming);
                                    self.repeated_in_merge(
                                        name,
                                        (existing_span, *name_span),
                                        &repeated,
                                    );
                                }
                            }
                            _ => {
                                let first = existing.span();
                                self.duplicate(name, first, *name_span);
                            }
                        }
                    }
                }
            }
            AttrName::Dynamic(expr) => {
                if in_let {
                    self.dynamic_in_let(expr.span);
                    return;
                }
                current.dynamics.push((
                    expr,
                    Entry::Value {
                        expr: value,
                        span: expr.span,
                    },
                    span,
                ));
            }
        }
    }

    /// An attribute-set literal bound before (`a = { x = 1; };`) becomes a set that
    /// later paths (`a.y = 2;`) merge into; any other entry stays as it is.
    fn nest_literal<'e>(&mut self, entry: &mut Entry<'e>) {
        if let Entry::Value { expr, span } | Entry::Deferred { expr, span } = entry
            && let ExprKind::Attrs {
                recursive,
                bindings,
            } = &expr.kind
        {
            let mut nested = SetBuilder::new(*recursive);
            let span = *span;
            self.add_literal(&mut nested, bindings);
            *entry = Entry::Nested {
                set: Box::new(nested),
                span,
            };
        }
    }

    /// Adds the bindings of a set literal to `set`; a `rec` set's are off the spine
    /// (its names are in scope for them).
    fn add_literal<'e>(&mut self, set: &mut SetBuilder<'e>, bindings: &'e [Binding]) {
        if set.recursive {
            self.off_spine(|compiler| compiler.add_bindings(set, bindings, false));
        } else {
            self.add_bindings(set, bindings, false);
        }
    }

    /// Merges `from` into `into`; the names both have are left as `into` has them,
    /// and returned with where each was first and again defined.
    pub(super) fn merge_sets<'e>(
        &mut self,
        into: &mut SetBuilder<'e>,
        from: SetBuilder<'e>,
    ) -> Vec<(Name, Span, Span)> {
        let mut repeated = Vec::new();
        for (name, entry) in from.statics.into_sorted() {
            if let Some(existing) = into.statics.get(&name) {
                repeated.push((name, existing.span(), entry.span()));
                continue;
            }
            into.statics.insert(name, entry);
        }
        into.dynamics.extend(from.dynamics);
        repeated
    }

    /// The names two sets given to `outer` both define (`sets`: where each was
    /// given): one is said with its path (`app1.address`, as Nix says it); several
    /// are one error at the two sets, not one each (a node's entry copied under the
    /// same name repeats every field).
    fn repeated_in_merge(
        &mut self,
        outer: &[u8],
        sets: (Span, Span),
        repeated: &[(Name, Span, Span)],
    ) {
        let outer = name_text(outer);
        match repeated {
            [] => {}
            [(name, first, again)] => self.error(
                Diagnostic::error(
                    codes::DUPLICATE_ATTRIBUTE,
                    format!("attribute `{outer}.{}` is defined twice", name_text(name)),
                )
                .with_primary(*again, "defined again here")
                .with_secondary(*first, "first defined here")
                .with_help(format!("the two sets given to `{outer}` are merged, and a name may be in only one of them: remove one of the definitions")),
            ),
            several => {
                let names: Vec<String> = several
                    .iter()
                    .map(|(name, _, _)| name_text(name).to_string())
                    .collect();
                self.error(
                    Diagnostic::error(
                        codes::DUPLICATE_ATTRIBUTE,
                        format!(
                            "`{outer}` is given two sets that both define {}",
                            crate::diagnostic::quoted_few(&names)
                        ),
                    )
                    .with_primary(sets.1, "given again here")
                    .with_secondary(sets.0, "first given here")
                    .with_help(format!("the two sets given to `{outer}` are merged, and a name may be in only one of them: rename one (an entry copied from another keeps its name), or merge them into one")),
                );
            }
        }
    }

    pub(super) fn dynamic_in_let(&mut self, span: Span) {
        self.error(
            Diagnostic::error(
                codes::DYNAMIC_ATTRIBUTE_NOT_ALLOWED,
                "dynamic attributes are not allowed in `let`",
            )
            .with_primary(span, "a name computed at evaluation time")
            .with_help("a `let` binds names known when the file is read; use an attribute set for computed names"),
        );
    }

    pub(super) fn entry_value(&mut self, entry: Entry<'_>, name: &Name) -> (Rc<Ir>, Span, bool) {
        match entry {
            Entry::Value { expr, span } => {
                let ir = match &expr.kind {
                    ExprKind::Lambda { param, body } => {
                        let lambda = self.lambda(param, body, expr.span, Some(*name));
                        node(IrKind::Lambda(lambda), expr.span)
                    }
                    _ => self.value(expr),
                };
                (ir, span, false)
            }
            Entry::Nested { set, span } => (self.compile_set(*set, span), span, false),
            Entry::Deferred { expr, span } => (self.deferred(expr, span, true), span, false),
            Entry::Inherited {
                from: None,
                name,
                span,
            } => (self.variable(&name_text(&name), span), span, true),
            Entry::Inherited {
                from: Some(from),
                name,
                span,
            } => {
                let from = self.off_spine(|compiler| compiler.expr(from));
                (
                    select_node(from, Box::new([IrAttrName::Static(name)]), None, span),
                    span,
                    false,
                )
            }
        }
    }

    pub(super) fn compile_set(&mut self, set: SetBuilder<'_>, span: Span) -> Rc<Ir> {
        if set.recursive && self.spine {
            return self.off_spine(|compiler| compiler.compile_set(set, span));
        }
        let recursive = set.recursive;
        let entries = set.statics.into_sorted();
        if recursive {
            let names = entries
                .iter()
                .enumerate()
                .map(|(slot, (name, _))| (*name, slot as u32))
                .collect();
            self.scopes
                .push(Scope::Frame(Rc::new(scope::Frame::new(names))));
        }
        let mut statics = Vec::with_capacity(entries.len());
        for (name, entry) in entries {
            let inherited_plain = matches!(entry, Entry::Inherited { from: None, .. });
            let (value, span, outer) = if recursive && inherited_plain {
                // `inherit x;` in `rec` looks outside the set
                let scope = self.scopes.pop();
                let result = self.entry_value(entry, &name);
                if let Some(scope) = scope {
                    self.scopes.push(scope);
                }
                result
            } else {
                self.entry_value(entry, &name)
            };
            statics.push(StaticAttrIr {
                name,
                value,
                span,
                outer,
            });
        }
        let mut dynamics = Vec::with_capacity(set.dynamics.len());
        for (name_expr, entry, span) in set.dynamics {
            let name = self.off_spine(|compiler| compiler.expr(name_expr));
            let (value, _, _) = self.entry_value(entry, &Name::of(""));
            dynamics.push(DynamicAttrIr { name, value, span });
        }
        if recursive {
            self.scopes.pop();
        }
        if statics.is_empty() && dynamics.is_empty() {
            // as Nix's one empty set: an empty set is never `«repeated»`, and equal
            // to every other, so one constant serves every evaluation
            return node(
                IrKind::Const(Value::Attrs(crate::value::Attrs::new())),
                span,
            );
        }
        node(
            IrKind::Attrs(Rc::new(AttrsIr {
                recursive,
                // only a `rec` set fills a frame
                order: if recursive {
                    fill_order(self.symbols, statics.iter().map(|attr| &*attr.name))
                } else {
                    Box::new([])
                },
                statics: statics.into_boxed_slice(),
                dynamics: dynamics.into_boxed_slice(),
            })),
            span,
        )
    }

    /// The `let` of `set`'s bindings around `body`; `spine`: the body is on the
    /// file's spine (its bindings never are).
    pub(super) fn compile_let(
        &mut self,
        set: SetBuilder<'_>,
        body: &Expr,
        span: Span,
        spine: bool,
    ) -> Rc<Ir> {
        let entries = set.statics.into_sorted();
        let order = fill_order(self.symbols, entries.iter().map(|(name, _)| &**name));
        let names = entries
            .iter()
            .enumerate()
            .map(|(slot, (name, _))| (*name, slot as u32))
            .collect();
        self.scopes
            .push(Scope::Frame(Rc::new(scope::Frame::new(names))));
        let mut bindings = Vec::with_capacity(entries.len());
        for (name, entry) in entries {
            let inherited_plain = matches!(entry, Entry::Inherited { from: None, .. });
            let (value, _, outer) = if inherited_plain {
                let scope = self.scopes.pop();
                let result = self.entry_value(entry, &name);
                if let Some(scope) = scope {
                    self.scopes.push(scope);
                }
                result
            } else {
                self.entry_value(entry, &name)
            };
            bindings.push(BindingIr { value, outer });
        }
        let outside = std::mem::replace(&mut self.spine, spine);
        self.spine_depth += 1;
        let body = self.expr(body);
        self.spine_depth -= 1;
        self.spine = outside;
        self.scopes.pop();
        node(
            IrKind::Let {
                bindings: bindings.into_boxed_slice(),
                order,
                body,
            },
            span,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Entry;

    /// A set of many plain entries (an inventory's 10,000 nodes) holds one entry a
    /// binding while it is lowered: a nested set inline made each 112 bytes.
    #[test]
    fn an_entry_stays_small() {
        assert!(
            std::mem::size_of::<Entry<'_>>() <= 32,
            "{}",
            std::mem::size_of::<Entry<'_>>()
        );
    }
}
