# expect: E029
{ a = throw "in json"; }
