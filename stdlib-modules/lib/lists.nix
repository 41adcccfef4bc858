# mesh.lib.lists: functions on lists (nixpkgs lib/lists.nix).
lib:
let
  inherit (builtins) length elemAt genList foldl' concatMap isList filter elem head tail;
in
rec {
  inherit (builtins) map filter elem elemAt length head tail concatLists concatMap genList
    any all partition groupBy sort foldl';

  optional = cond: element: if cond then [ element ] else [ ];
  optionals = cond: elements: if cond then elements else [ ];

  singleton = x: [ x ];
  toList = x: if isList x then x else [ x ];

  foldr = op: nul: list:
    let
      len = length list;
      fold' = n: if n == len then nul else op (elemAt list n) (fold' (n + 1));
    in
    fold' 0;
  foldl = op: nul: list:
    let
      fold' = n: if n == -1 then nul else op (fold' (n - 1)) (elemAt list n);
    in
    fold' (length list - 1);

  imap0 = f: list: genList (n: f n (elemAt list n)) (length list);
  imap1 = f: list: genList (n: f (n + 1) (elemAt list n)) (length list);

  flatten = x: if isList x then concatMap (y: flatten y) x else [ x ];
  remove = e: filter (x: x != e);
  count = pred: foldl' (c: x: if pred x then c + 1 else c) 0;
  findFirst = pred: default: list:
    let found = filter pred list; in if found == [ ] then default else head found;

  range = first: last:
    if first > last then [ ] else genList (n: first + n) (last - first + 1);
  replicate = n: elem: genList (_: elem) n;

  zipListsWith = f: fst: snd:
    genList (n: f (elemAt fst n) (elemAt snd n))
      (lib.trivial.min (length fst) (length snd));
  zipLists = zipListsWith (fst: snd: { inherit fst snd; });

  reverseList = xs: let l = length xs; in genList (n: elemAt xs (l - n - 1)) l;

  unique = foldl' (acc: e: if elem e acc then acc else acc ++ [ e ]) [ ];
  intersectLists = e: filter (x: elem x e);
  subtractLists = e: filter (x: !(elem x e));

  sublist = start: count: list:
    let len = length list; in
    genList (n: elemAt list (n + start))
      (if start >= len then 0
       else if start + count > len then len - start
       else count);
  take = count: sublist 0 count;
  drop = count: list: sublist count (length list) list;

  last = list:
    if list == [ ] then throw "lists.last: list must not be empty!"
    else elemAt list (length list - 1);
  init = list:
    if list == [ ] then throw "lists.init: list must not be empty!"
    else take (length list - 1) list;

  intersperse = separator: list:
    if list == [ ] || length list == 1 then list
    else tail (concatMap (x: [ separator x ]) list);
}
