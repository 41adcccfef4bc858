let __sub = a: b: "sub ${toString a} ${toString b}"; in -1
