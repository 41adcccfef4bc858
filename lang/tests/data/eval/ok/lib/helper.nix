# A helper imported by the ok cases; not a case itself.
{
  greeting = "hello from helper";
  double = x: x * 2;
  list = [ 1 2 3 ];
}
