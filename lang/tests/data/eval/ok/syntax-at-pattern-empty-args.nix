let f = { a ? 1 }@args: args; in f { }
