let bad = throw "never"; good = 1; in good
