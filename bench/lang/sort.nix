# `sort` of 200,000 pseudo-random integers (a linear congruential generator).
let
  modulus = 2147483648;
  random = i: let x = i * 1103515245 + 12345; in x - (x / modulus) * modulus;
  sorted = builtins.sort builtins.lessThan (builtins.genList random 200000);
in
{
  length = builtins.length sorted;
  first = builtins.head sorted;
  middle = builtins.elemAt sorted 100000;
  last = builtins.elemAt sorted 199999;
}
