let fresh = [ 1 2 ]; name = fresh; in [ fresh name ]
