({ }: "empty") { }
