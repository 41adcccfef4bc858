[ (true -> false) (false -> throw "lazy") (true -> true) (false -> true -> false) ]
