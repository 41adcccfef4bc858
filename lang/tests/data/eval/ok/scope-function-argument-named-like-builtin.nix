[ ((map: map) 1) ((toString: toString + 1) 2) ]
