let vs = [ 1 1.0 "s" true null [ ] { } (x: x) ./lib builtins.head ]; in map (f: map f vs) (with builtins; [ isInt isFloat isString isBool isNull isList isAttrs isFunction isPath ])
