//! Strings and paths: interpolation parts and path literals, resolved against
//! the file's directory when compiled.

use super::*;

impl Compiler<'_> {
    pub(super) fn string(&mut self, parts: &[StringPart], span: Span) -> Rc<Ir> {
        match parts {
            [] => node(IrKind::Const(Value::string(b"")), span),
            [StringPart::Literal(bytes)] => node(IrKind::Const(Value::string(bytes)), span),
            _ => {
                let parts = parts
                    .iter()
                    .map(|part| match part {
                        StringPart::Literal(bytes) => {
                            node(IrKind::Const(Value::string(bytes)), span)
                        }
                        StringPart::Interpolation(expr) => self.expr(expr),
                    })
                    .collect();
                node(IrKind::Interpolate(parts), span)
            }
        }
    }

    pub(super) fn path(&mut self, parts: &[StringPart], span: Span) -> Rc<Ir> {
        let Some(StringPart::Literal(first)) = parts.first() else {
            return self.error_node(span);
        };
        let mut resolved = absolute_path(first, &self.base_directory);
        if first.len() > 1 && first.last() == Some(&b'/') && resolved != b"/" {
            resolved.push(b'/');
        }
        // a literal naming a `.nix` file alone: a file the program may import next
        if parts.len() == 1 && resolved.ends_with(b".nix") {
            self.nix_paths.push(resolved.clone());
        }
        let first = node(
            IrKind::Const(Value::Path(crate::value::Bytes::from(resolved))),
            span,
        );
        if parts.len() == 1 {
            return first;
        }
        let mut compiled = vec![first];
        for part in &parts[1..] {
            compiled.push(match part {
                StringPart::Literal(bytes) => node(IrKind::Const(Value::string(bytes)), span),
                StringPart::Interpolation(expr) => self.expr(expr),
            });
        }
        node(IrKind::PathConcat(compiled.into_boxed_slice()), span)
    }
}
