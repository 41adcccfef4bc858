"\${not} $${also not} $x $"
