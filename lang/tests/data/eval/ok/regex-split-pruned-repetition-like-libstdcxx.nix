builtins.split "(((a)?)*?|(b|)*(b|))+*" "babax"
