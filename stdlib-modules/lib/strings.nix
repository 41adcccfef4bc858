# mesh.lib.strings: functions on strings (nixpkgs lib/strings.nix).
lib:
let
  inherit (builtins) substring stringLength genList replaceStrings concatStringsSep
    filter isString split match elemAt length;
in
rec {
  inherit (builtins) concatStringsSep replaceStrings substring stringLength toString;

  concatStrings = concatStringsSep "";
  concatMapStrings = f: list: concatStrings (map f list);
  concatMapStringsSep = sep: f: list: concatStringsSep sep (map f list);
  concatImapStringsSep = sep: f: list: concatStringsSep sep (lib.lists.imap1 f list);
  concatLines = list: concatMapStrings (s: s + "\n") list;

  optionalString = cond: string: if cond then string else "";

  hasPrefix = pref: str: substring 0 (stringLength pref) str == pref;
  hasSuffix = suffix: content:
    let
      lenContent = stringLength content;
      lenSuffix = stringLength suffix;
    in
    lenContent >= lenSuffix && substring (lenContent - lenSuffix) lenContent content == suffix;
  hasInfix = infix: content:
    let
      lenInfix = stringLength infix;
      lenContent = stringLength content;
      at = n: n + lenInfix <= lenContent
        && (substring n lenInfix content == infix || at (n + 1));
    in
    at 0;

  removePrefix = prefix: str:
    let preLen = stringLength prefix; in
    if substring 0 preLen str == prefix
    then substring preLen (stringLength str - preLen) str
    else str;
  removeSuffix = suffix: str:
    let
      sufLen = stringLength suffix;
      sLen = stringLength str;
    in
    if sufLen <= sLen && suffix == substring (sLen - sufLen) sufLen str
    then substring 0 (sLen - sufLen) str
    else str;

  stringToCharacters = s: genList (p: substring p 1 s) (stringLength s);
  escape = list: replaceStrings list (map (c: "\\${c}") list);
  escapeRegex = escape (stringToCharacters "\\[{()^$?*+|.");

  splitString = sep: s: filter isString (split (escapeRegex (toString sep)) (toString s));

  lowerChars = stringToCharacters "abcdefghijklmnopqrstuvwxyz";
  upperChars = stringToCharacters "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  toLower = replaceStrings upperChars lowerChars;
  toUpper = replaceStrings lowerChars upperChars;

  escapeShellArg = arg:
    let string = toString arg; in
    if match "[[:alnum:],._+:@%/-]+" string == null
    then "'${replaceStrings [ "'" ] [ "'\\''" ] string}'"
    else string;
  escapeShellArgs = concatMapStringsSep " " escapeShellArg;

  fixedWidthString = width: filler: str:
    let strw = stringLength str; in
    if strw >= width then str else fixedWidthString width filler (filler + str);
  fixedWidthNumber = width: n: fixedWidthString width "0" (toString n);

  trim = s:
    let m = match "[[:space:]]*(.*[^[:space:]])[[:space:]]*" s; in
    if m == null then "" else elemAt m 0;

  toInt = str:
    let parsed = match "[[:space:]]*(-?[0-9]+)[[:space:]]*" str; in
    if parsed == null then throw "could not convert `${str}` to an integer"
    else if match "-?0[0-9]+" (elemAt parsed 0) != null
    then throw "ambiguity in interpretation of `${str}` (leading zeros): use toIntBase10"
    else builtins.fromJSON (elemAt parsed 0);
  toIntBase10 = str:
    let parsed = match "[[:space:]]*(-?[0-9]+)[[:space:]]*" str; in
    if parsed == null then throw "could not convert `${str}` to an integer"
    else builtins.fromJSON (removeLeadingZeros (elemAt parsed 0));
  removeLeadingZeros = s:
    let m = match "(-?)0*([0-9]+)" s; in
    if m == null then s else elemAt m 0 + elemAt m 1;

  isPrefixOf = hasPrefix;
  versionOlder = v1: v2: builtins.compareVersions v2 v1 == 1;
  versionAtLeast = v1: v2: !versionOlder v1 v2;
}
