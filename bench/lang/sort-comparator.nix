# `sort` with a comparator over records, as module systems order by priority and
# name: 30,000 records by priority, then name.
let
  modulus = 2147483648;
  random = i: let x = i * 1103515245 + 12345; in x - (x / modulus) * modulus;
  records = builtins.genList (i: { priority = random i - (random i / 50) * 50; name = "entry${toString (random (i + 7))}"; }) 30000;
  sorted = builtins.sort (a: b: a.priority < b.priority || (a.priority == b.priority && a.name < b.name)) records;
in
{
  first = builtins.head sorted;
  middle = builtins.elemAt sorted 15000;
  last = builtins.elemAt sorted 29999;
}
