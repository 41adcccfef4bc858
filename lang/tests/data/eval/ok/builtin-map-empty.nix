map (x: throw "no") [ ]
