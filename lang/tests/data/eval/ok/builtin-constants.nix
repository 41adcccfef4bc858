[ builtins.langVersion builtins.nixVersion ]
