[ (false -> false -> false) ((false -> false) -> false) ]
