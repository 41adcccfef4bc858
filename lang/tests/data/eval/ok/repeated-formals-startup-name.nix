({ zq ? [ 1 2 ], name ? zq }: [ name zq ]) { }
