# expect: E043
# max-steps: 5000
# a limit reached under `addErrorContext` stays that error, even where the context
# is no string (which would otherwise be the error raised): what ran out is what
# the editor and the build must know
builtins.addErrorContext 1 (builtins.foldl' (a: b: a + b) 0 (builtins.genList (x: x) 100000))
