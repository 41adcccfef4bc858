[ (builtins.map null [ ]) (builtins.genList null 0) (builtins.mapAttrs null { }) ]
