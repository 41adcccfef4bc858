# expect: E001
# error-count: 2
{
  a = ;
  b = 2
  c = 3;
}
