# expect: E038
{ } < { }
