# A list's item written in 64 bytes or more that is a variable shares its value.
let l = [ 1 2 ]; in [ l (                                                                  l) ]
