(args@{ a ? 1, ... }: args // { inherit a; }) { b = 2; }
