builtins.unsafeDiscardStringContext "plain"
