# mesh.lib.attrsets: functions on attribute sets (nixpkgs lib/attrsets.nix).
lib:
let
  inherit (builtins) attrNames listToAttrs concatMap length elemAt head isAttrs
    zipAttrsWith foldl';
in
rec {
  inherit (builtins) attrNames attrValues listToAttrs mapAttrs removeAttrs
    intersectAttrs catAttrs zipAttrsWith hasAttr getAttr;

  nameValuePair = name: value: { inherit name value; };

  optionalAttrs = cond: as: if cond then as else { };

  mapAttrsToList = f: attrs: map (name: f name attrs.${name}) (attrNames attrs);
  attrsToList = mapAttrsToList nameValuePair;
  "mapAttrs'" = f: set: listToAttrs (map (attr: f attr set.${attr}) (attrNames set));
  filterAttrs = pred: set:
    listToAttrs (concatMap
      (name: let v = set.${name}; in if pred name v then [ (nameValuePair name v) ] else [ ])
      (attrNames set));
  concatMapAttrs = f: set: foldl' (acc: x: acc // x) { } (mapAttrsToList f set);
  foldlAttrs = f: init: set:
    foldl' (acc: name: f acc name set.${name}) init (attrNames set);
  mapAttrsRecursive = mapAttrsRecursiveCond (_: true);
  mapAttrsRecursiveCond = cond: f: set:
    let
      recurse = path: builtins.mapAttrs (name: value:
        if isAttrs value && cond value
        then recurse (path ++ [ name ]) value
        else f (path ++ [ name ]) value);
    in
    recurse [ ] set;

  genAttrs = names: f: listToAttrs (map (n: nameValuePair n (f n)) names);

  attrByPath = attrPath: default: set:
    let
      len = length attrPath;
      walk = n: s:
        if n == len then s
        else
          let attr = elemAt attrPath n; in
          if s ? ${attr} then walk (n + 1) s.${attr} else default;
    in
    walk 0 set;
  hasAttrByPath = attrPath: set:
    let
      len = length attrPath;
      walk = n: s:
        n == len || (let attr = elemAt attrPath n; in s ? ${attr} && walk (n + 1) s.${attr});
    in
    walk 0 set;
  getAttrFromPath = attrPath: set:
    attrByPath attrPath
      (throw "cannot find attribute `${builtins.concatStringsSep "." attrPath}'") set;
  setAttrByPath = attrPath: value:
    let
      len = length attrPath;
      atDepth = n: if n == len then value else { ${elemAt attrPath n} = atDepth (n + 1); };
    in
    atDepth 0;

  recursiveUpdateUntil = pred: lhs: rhs:
    let
      f = attrPath: zipAttrsWith (n: values:
        let here = attrPath ++ [ n ]; in
        if length values == 1 || pred here (elemAt values 1) (head values)
        then head values
        else f here values);
    in
    f [ ] [ rhs lhs ];
  recursiveUpdate = recursiveUpdateUntil (path: lhs: rhs: !(isAttrs lhs && isAttrs rhs));
}
