[ (builtins.compareVersions "1.0" "2.3") (builtins.compareVersions "2.1" "2.3") (builtins.compareVersions "2.3" "2.3") (builtins.compareVersions "2.5" "2.3") (builtins.compareVersions "3.1" "2.3a") ]
