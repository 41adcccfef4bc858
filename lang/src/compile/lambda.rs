//! Functions: a parameter or formals (with defaults and `@`) bound into the
//! callee's frame, duplicate names reported.

use super::*;

impl Compiler<'_> {
    pub(super) fn lambda(
        &mut self,
        param: &Param,
        body: &Expr,
        span: Span,
        name: Option<Name>,
    ) -> Rc<LambdaIr> {
        match param {
            Param::Identifier {
                name: parameter, ..
            } => {
                let parameter = Name::new(parameter.as_bytes());
                let mut names = NameMap::with_capacity_and_hasher(1, Default::default());
                names.insert(parameter, 0);
                self.scopes
                    .push(Scope::Frame(Rc::new(scope::Frame::new(names))));
                let body = self.expr(body);
                self.scopes.pop();
                Rc::new(LambdaIr {
                    name,
                    parameter_name: Some(parameter),
                    param: ParamIr::Identifier,
                    body,
                    span,
                    frame_size: 1,
                })
            }
            Param::Formals {
                formals,
                ellipsis,
                at,
            } => {
                // a formal's slot is its position; a name given twice keeps the first
                let mut names: NameMap<u32> = NameMap::with_capacity_and_hasher(
                    formals.len() + usize::from(at.is_some()),
                    Default::default(),
                );
                let mut interned: Vec<crate::name::Name> = Vec::with_capacity(formals.len());
                for (slot, formal) in formals.iter().enumerate() {
                    let name = crate::name::Name::new(formal.name.as_bytes());
                    interned.push(name);
                    if let Some(first) = names.get(&name) {
                        let first = formals[*first as usize].span;
                        self.duplicate_formal(&formal.name, first, formal.span);
                        continue;
                    }
                    names.insert(name, slot as u32);
                }
                if let Some((at_name, at_span)) = at {
                    let key = Name::new(at_name.as_bytes());
                    if let Some(first) = names.get(&key) {
                        let first = formals[*first as usize].span;
                        self.duplicate_formal(at_name, first, *at_span);
                    } else {
                        names.insert(key, formals.len() as u32);
                    }
                }
                self.scopes
                    .push(Scope::Frame(Rc::new(scope::Frame::new(names))));
                let compiled_formals = formals
                    .iter()
                    .zip(interned)
                    .map(|(formal, name)| FormalIr {
                        name,
                        span: formal.span,
                        default: formal.default.as_ref().map(|d| self.expr(d)),
                    })
                    .collect();
                let body = self.expr(body);
                self.scopes.pop();
                Rc::new(LambdaIr {
                    name,
                    parameter_name: at.as_ref().map(|(name, _)| Name::new(name.as_bytes())),
                    param: ParamIr::Formals {
                        order: fill_order(
                            self.symbols,
                            formals.iter().map(|formal| formal.name.as_bytes()),
                        ),
                        formals: compiled_formals,
                        ellipsis: *ellipsis,
                        at: at.is_some(),
                    },
                    body,
                    span,
                    frame_size: formals.len() + usize::from(at.is_some()),
                })
            }
        }
    }

    pub(super) fn duplicate_formal(&mut self, name: &str, first: Span, second: Span) {
        self.error(
            Diagnostic::error(
                codes::DUPLICATE_FORMAL,
                format!("function argument `{name}` is named twice"),
            )
            .with_primary(second, "named again here")
            .with_secondary(first, "first named here")
            .with_help("give each argument a different name"),
        );
    }
}
