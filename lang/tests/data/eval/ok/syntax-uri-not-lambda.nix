[ x:x (x: x) ]
