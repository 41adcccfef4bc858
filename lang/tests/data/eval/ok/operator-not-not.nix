!!true
