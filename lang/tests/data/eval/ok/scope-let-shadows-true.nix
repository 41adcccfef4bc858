let true = false; in [ true (!true) ]
