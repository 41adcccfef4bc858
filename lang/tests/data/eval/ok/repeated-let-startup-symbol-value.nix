let value = [ 1 2 ]; fresh = value; in [ value fresh ]
