let f = { x ? throw "unused" }: 0; in f { }
