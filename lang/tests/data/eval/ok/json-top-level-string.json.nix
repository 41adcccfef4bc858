"hello \"world\""
