assert true; assert !false; 42
