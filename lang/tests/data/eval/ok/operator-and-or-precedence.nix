[ (true || false && false) (false && true || true) ]
