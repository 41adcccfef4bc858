let p = [ 0 1 ]; in [ p p p ]
