let x = [ ]; in [ x x ]
