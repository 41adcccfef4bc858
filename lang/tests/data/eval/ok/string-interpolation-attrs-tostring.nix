let s = { __toString = self: "custom"; }; in "value: ${s}"
