{ inherit ({ p = 1; q = 2; }) p q; }
