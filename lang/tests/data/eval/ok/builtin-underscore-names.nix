[ (__length [ 1 ]) (__head [ 2 ]) (__add 1 2) ]
