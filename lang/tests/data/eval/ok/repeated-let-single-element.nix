let one = [ "x" ]; two = one; in [ one two ]
