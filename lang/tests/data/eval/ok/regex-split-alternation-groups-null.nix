builtins.split "(a)|(b)" "xaybz"
