# expect: E029
# message-contains: deep inside
{ ok = 1; bad = [ (throw "deep inside") ]; }
