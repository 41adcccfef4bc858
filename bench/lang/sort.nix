# `sort` of 100,000 pseudo-random integers (a linear congruential generator).
let
  modulus = 2147483648;
  random = i: let x = i * 1103515245 + 12345; in x - (x / modulus) * modulus;
  sorted = builtins.sort builtins.lessThan (builtins.genList random 100000);
in
{
  length = builtins.length sorted;
  first = builtins.head sorted;
  middle = builtins.elemAt sorted 50000;
  last = builtins.elemAt sorted 99999;
}
