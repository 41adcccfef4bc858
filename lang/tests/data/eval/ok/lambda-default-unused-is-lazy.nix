({ a ? throw "lazy" }: 1) { }
