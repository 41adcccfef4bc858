builtins.attrNames { zeta = 1; alpha = 2; Beta = 3; "_x" = 4; "10" = 5; "9" = 6; }
