with (throw "unused"); 1
