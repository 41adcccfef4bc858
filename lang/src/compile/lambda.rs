//! Functions: a parameter or formals (with defaults and `@`) bound into the
//! callee's frame, duplicate names reported.

use super::*;

impl Compiler<'_> {
    pub(super) fn lambda(
        &mut self,
        param: &Param,
        body: &Expr,
        span: Span,
        name: Option<Bytes>,
    ) -> Rc<LambdaIr> {
        match param {
            Param::Identifier {
                name: parameter, ..
            } => {
                let mut names = HashMap::new();
                names.insert(Rc::from(parameter.as_bytes()), 0);
                self.scopes.push(Scope::Frame(names));
                let body = self.expr(body);
                self.scopes.pop();
                Rc::new(LambdaIr {
                    name,
                    parameter_name: Some(Rc::from(parameter.as_bytes())),
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
                let mut names: HashMap<Bytes, u32> = HashMap::new();
                let mut spans: HashMap<Bytes, Span> = HashMap::new();
                for (slot, formal) in formals.iter().enumerate() {
                    let key: Bytes = Rc::from(formal.name.as_bytes());
                    if let Some(first) = spans.get(&key) {
                        let first = *first;
                        self.duplicate_formal(&formal.name, first, formal.span);
                        continue;
                    }
                    spans.insert(key.clone(), formal.span);
                    names.insert(key, slot as u32);
                }
                if let Some((at_name, at_span)) = at {
                    let key: Bytes = Rc::from(at_name.as_bytes());
                    if let Some(first) = spans.get(&key) {
                        let first = *first;
                        self.duplicate_formal(at_name, first, *at_span);
                    } else {
                        names.insert(key, formals.len() as u32);
                    }
                }
                self.scopes.push(Scope::Frame(names));
                let compiled_formals = formals
                    .iter()
                    .map(|formal| FormalIr {
                        name: crate::value::intern(formal.name.as_bytes()),
                        span: formal.span,
                        default: formal.default.as_ref().map(|d| self.expr(d)),
                    })
                    .collect();
                let body = self.expr(body);
                self.scopes.pop();
                Rc::new(LambdaIr {
                    name,
                    parameter_name: at.as_ref().map(|(name, _)| Rc::from(name.as_bytes())),
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
