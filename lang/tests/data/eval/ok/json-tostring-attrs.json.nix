[ { __toString = self: "custom"; } { outPath = "/some/path"; other = 1; } ]
