let d = [ 1 2 ]; in [ (if true then d else d) d ]
