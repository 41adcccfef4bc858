let in 5
