[ (false && throw "no") (true || throw "no") ]
