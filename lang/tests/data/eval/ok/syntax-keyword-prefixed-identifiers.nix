let iff = 1; inx = 2; letx = 3; then_ = 4; rec-x = 5; in [ iff inx letx then_ rec-x ]
