[ (builtins.splitVersion "1.2.3") (builtins.splitVersion "2.3pre1") (builtins.splitVersion "1-2_3") (builtins.splitVersion "") (builtins.splitVersion "abc1.2.x") (builtins.splitVersion "..1..") ]
