# expect: E001
let é = 1; in é
