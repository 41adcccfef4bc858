import ./lib/pkg
