(1).a or "not a set"
