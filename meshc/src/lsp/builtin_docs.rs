//! Short documentation of every builtin of the mesh language, for hover and
//! completion: (name, how it is called, what it does). A test checks that every
//! name the evaluator knows is here. No behaviour lives here.

/// (name, usage, description), sorted by name.
pub const BUILTINS: &[(&str, &str, &str)] = &[
    (
        "abort",
        "abort message",
        "Stops evaluation with an error (E030) showing `message`.",
    ),
    (
        "add",
        "builtins.add a b",
        "The sum of two numbers, as `a + b`.",
    ),
    (
        "addErrorContext",
        "builtins.addErrorContext message value",
        "Returns `value`; if evaluating it fails, `message` is added to the error's trace.",
    ),
    (
        "all",
        "builtins.all predicate list",
        "Whether `predicate` holds for every element of `list`.",
    ),
    (
        "any",
        "builtins.any predicate list",
        "Whether `predicate` holds for at least one element of `list`.",
    ),
    (
        "appendContext",
        "builtins.appendContext string context",
        "Refused in mesh (E036): there are no store paths, so strings carry no context.",
    ),
    (
        "attrNames",
        "builtins.attrNames set",
        "The names of a set's attributes, sorted.",
    ),
    (
        "attrValues",
        "builtins.attrValues set",
        "The values of a set's attributes, in the order of their sorted names.",
    ),
    (
        "baseNameOf",
        "baseNameOf path",
        "The last component of a path or string: `baseNameOf \"/a/b.nix\"` is `\"b.nix\"`.",
    ),
    (
        "bitAnd",
        "builtins.bitAnd a b",
        "Bitwise AND of two integers.",
    ),
    ("bitOr", "builtins.bitOr a b", "Bitwise OR of two integers."),
    (
        "bitXor",
        "builtins.bitXor a b",
        "Bitwise exclusive OR of two integers.",
    ),
    (
        "builtins",
        "builtins",
        "The set of every builtin function and constant: `builtins.map`, `builtins.toJSON`, ...",
    ),
    (
        "catAttrs",
        "builtins.catAttrs name sets",
        "The values of attribute `name` in each set of the list that has it.",
    ),
    (
        "ceil",
        "builtins.ceil number",
        "The smallest integer not less than `number`.",
    ),
    (
        "compareVersions",
        "builtins.compareVersions a b",
        "-1, 0 or 1 as version string `a` is older than, equal to or newer than `b`.",
    ),
    (
        "concatLists",
        "builtins.concatLists lists",
        "The lists of a list joined into one.",
    ),
    (
        "concatMap",
        "builtins.concatMap f list",
        "`f` applied to each element, the resulting lists joined: `concatLists (map f list)`.",
    ),
    (
        "concatStringsSep",
        "builtins.concatStringsSep separator strings",
        "The strings joined with `separator` between them.",
    ),
    (
        "currentSystem",
        "builtins.currentSystem",
        "Refused in mesh (E036): plans must not depend on the machine that compiles them.",
    ),
    (
        "currentTime",
        "builtins.currentTime",
        "Refused in mesh (E036): evaluation must not depend on the clock.",
    ),
    (
        "deepSeq",
        "builtins.deepSeq a b",
        "Evaluates `a` completely (lists and sets included), then returns `b`.",
    ),
    (
        "derivation",
        "derivation attrs",
        "Refused in mesh (E036): there is no Nix store; describe what a node needs with shapes.",
    ),
    (
        "derivationStrict",
        "builtins.derivationStrict attrs",
        "Refused in mesh (E036): there is no Nix store; describe what a node needs with shapes.",
    ),
    (
        "dirOf",
        "dirOf path",
        "Everything before the last `/` of a path or string: `dirOf \"/a/b.nix\"` is `\"/a\"`.",
    ),
    (
        "div",
        "builtins.div a b",
        "The quotient of two numbers, as `a / b` (integer division for integers; E026 for zero).",
    ),
    (
        "elem",
        "builtins.elem value list",
        "Whether `list` has an element equal to `value`.",
    ),
    (
        "elemAt",
        "builtins.elemAt list index",
        "The element at zero-based `index` of `list`.",
    ),
    ("false", "false", "The Boolean false."),
    (
        "fetchGit",
        "builtins.fetchGit args",
        "Refused in mesh (E036): evaluation does no network access; keep the files in the repository.",
    ),
    (
        "fetchMercurial",
        "builtins.fetchMercurial args",
        "Refused in mesh (E036): evaluation does no network access; keep the files in the repository.",
    ),
    (
        "fetchTarball",
        "builtins.fetchTarball args",
        "Refused in mesh (E036): evaluation does no network access; keep the files in the repository.",
    ),
    (
        "fetchTree",
        "builtins.fetchTree args",
        "Refused in mesh (E036): evaluation does no network access; keep the files in the repository.",
    ),
    (
        "fetchurl",
        "builtins.fetchurl args",
        "Refused in mesh (E036): evaluation does no network access; keep the files in the repository.",
    ),
    (
        "filter",
        "builtins.filter predicate list",
        "The elements of `list` for which `predicate` holds, in order.",
    ),
    (
        "filterSource",
        "builtins.filterSource predicate path",
        "Refused in mesh (E036): there is no Nix store; declare an artifact instead.",
    ),
    (
        "findFile",
        "builtins.findFile searchPath name",
        "Refused in mesh (E036): search paths (`<nixpkgs>`) are not supported.",
    ),
    (
        "floor",
        "builtins.floor number",
        "The largest integer not greater than `number`.",
    ),
    (
        "foldl'",
        "builtins.foldl' f initial list",
        "Folds from the left, strictly: `f (f (f initial x0) x1) x2`.",
    ),
    (
        "fromJSON",
        "builtins.fromJSON text",
        "The value a JSON text denotes.",
    ),
    (
        "fromTOML",
        "builtins.fromTOML text",
        "The value a TOML text denotes.",
    ),
    (
        "functionArgs",
        "builtins.functionArgs f",
        "For a function taking a set pattern, its argument names mapped to whether each has a default.",
    ),
    (
        "genList",
        "builtins.genList f length",
        "The list `[ (f 0) (f 1) ... (f (length - 1)) ]`.",
    ),
    (
        "genericClosure",
        "builtins.genericClosure { startSet; operator; }",
        "Every item reachable from `startSet` by `operator`, each `key` once.",
    ),
    (
        "getAttr",
        "builtins.getAttr name set",
        "The attribute `name` of `set`, as `set.${name}`.",
    ),
    (
        "getContext",
        "builtins.getContext string",
        "Refused in mesh (E036): there are no store paths, so strings carry no context.",
    ),
    (
        "getEnv",
        "builtins.getEnv name",
        "Refused in mesh (E036): evaluation must not depend on the environment.",
    ),
    (
        "groupBy",
        "builtins.groupBy f list",
        "The elements of `list` grouped into a set by the name `f` gives each.",
    ),
    (
        "hasAttr",
        "builtins.hasAttr name set",
        "Whether `set` has attribute `name`, as `set ? ${name}`.",
    ),
    (
        "hasContext",
        "builtins.hasContext string",
        "Refused in mesh (E036): there are no store paths, so strings carry no context.",
    ),
    (
        "hashFile",
        "builtins.hashFile algorithm path",
        "The hash of a repository file's bytes in hexadecimal (`\"sha256\"`, `\"sha1\"`, `\"md5\"`, `\"sha512\"`).",
    ),
    (
        "hashString",
        "builtins.hashString algorithm string",
        "The hash of a string in hexadecimal (`\"sha256\"`, `\"sha1\"`, `\"md5\"`, `\"sha512\"`).",
    ),
    (
        "head",
        "builtins.head list",
        "The first element of a non-empty list.",
    ),
    (
        "import",
        "import path",
        "The value of another file of the repository (evaluated once, then shared).",
    ),
    (
        "intersectAttrs",
        "builtins.intersectAttrs a b",
        "The attributes of `b` whose names `a` also has.",
    ),
    (
        "isAttrs",
        "builtins.isAttrs value",
        "Whether `value` is a set.",
    ),
    (
        "isBool",
        "builtins.isBool value",
        "Whether `value` is a Boolean.",
    ),
    (
        "isFloat",
        "builtins.isFloat value",
        "Whether `value` is a floating-point number.",
    ),
    (
        "isFunction",
        "builtins.isFunction value",
        "Whether `value` is a function.",
    ),
    (
        "isInt",
        "builtins.isInt value",
        "Whether `value` is an integer.",
    ),
    (
        "isList",
        "builtins.isList value",
        "Whether `value` is a list.",
    ),
    ("isNull", "isNull value", "Whether `value` is `null`."),
    (
        "isPath",
        "builtins.isPath value",
        "Whether `value` is a path (`./file`).",
    ),
    (
        "isString",
        "builtins.isString value",
        "Whether `value` is a string.",
    ),
    (
        "langVersion",
        "builtins.langVersion",
        "The version of the Nix language mesh follows.",
    ),
    (
        "length",
        "builtins.length list",
        "The number of elements of a list.",
    ),
    (
        "lessThan",
        "builtins.lessThan a b",
        "Whether `a < b` (numbers, strings, paths or lists).",
    ),
    (
        "listToAttrs",
        "builtins.listToAttrs [ { name; value; } ... ]",
        "A set from a list of name/value pairs; the first of repeated names wins.",
    ),
    (
        "map",
        "map f list",
        "The list of `f` applied to each element of `list`.",
    ),
    (
        "mapAttrs",
        "builtins.mapAttrs f set",
        "The set with each attribute's value replaced by `f name value`.",
    ),
    (
        "match",
        "builtins.match regex string",
        "The capture groups if the POSIX extended `regex` matches the whole `string`, else null.",
    ),
    (
        "mul",
        "builtins.mul a b",
        "The product of two numbers, as `a * b`.",
    ),
    (
        "nixPath",
        "builtins.nixPath",
        "Refused in mesh (E036): search paths (`<nixpkgs>`) are not supported.",
    ),
    (
        "nixVersion",
        "builtins.nixVersion",
        "The version of Nix whose language mesh follows.",
    ),
    ("null", "null", "The null value."),
    (
        "parseDrvName",
        "builtins.parseDrvName name",
        "Splits `\"name-1.2\"` into `{ name = \"name\"; version = \"1.2\"; }`.",
    ),
    (
        "partition",
        "builtins.partition predicate list",
        "`{ right; wrong; }`: the elements for which `predicate` holds and those for which it does not.",
    ),
    (
        "path",
        "builtins.path args",
        "Refused in mesh (E036): there is no Nix store.",
    ),
    (
        "pathExists",
        "builtins.pathExists path",
        "Whether a file or directory exists at `path` (inside the repository).",
    ),
    (
        "placeholder",
        "placeholder output",
        "Refused in mesh (E036): there are no derivations.",
    ),
    (
        "readDir",
        "builtins.readDir path",
        "A directory's entries, each mapped to `\"regular\"`, `\"directory\"`, `\"symlink\"` or `\"unknown\"`.",
    ),
    (
        "readFile",
        "builtins.readFile path",
        "The contents of a repository file as a string.",
    ),
    (
        "readFileType",
        "builtins.readFileType path",
        "The type of a repository file: `\"regular\"`, `\"directory\"`, `\"symlink\"` or `\"unknown\"` (newer than Nix 2.8).",
    ),
    (
        "removeAttrs",
        "removeAttrs set names",
        "The set without the attributes named in the list `names`.",
    ),
    (
        "replaceStrings",
        "builtins.replaceStrings from to string",
        "`string` with each occurrence of an element of `from` replaced by the element of `to` at the same index.",
    ),
    (
        "scopedImport",
        "scopedImport scope path",
        "Refused in mesh (E036): use `import` and pass arguments to the file's function.",
    ),
    (
        "seq",
        "builtins.seq a b",
        "Evaluates `a` to weak head normal form, then returns `b`.",
    ),
    (
        "sort",
        "builtins.sort lessThan list",
        "The list sorted by the comparison function (stable).",
    ),
    (
        "split",
        "builtins.split regex string",
        "The string split at matches of `regex`: pieces alternate with lists of capture groups.",
    ),
    (
        "splitVersion",
        "builtins.splitVersion version",
        "A version string split into its components.",
    ),
    (
        "storeDir",
        "builtins.storeDir",
        "Refused in mesh (E036): there is no Nix store.",
    ),
    (
        "storePath",
        "builtins.storePath path",
        "Refused in mesh (E036): there is no Nix store.",
    ),
    (
        "stringLength",
        "builtins.stringLength string",
        "The length of a string in bytes.",
    ),
    (
        "sub",
        "builtins.sub a b",
        "The difference of two numbers, as `a - b`.",
    ),
    (
        "substring",
        "builtins.substring start length string",
        "The bytes of `string` from `start`, at most `length` of them.",
    ),
    (
        "tail",
        "builtins.tail list",
        "A non-empty list without its first element.",
    ),
    (
        "throw",
        "throw message",
        "Stops evaluation with an error (E029) showing `message`; `tryEval` can catch it.",
    ),
    (
        "toFile",
        "builtins.toFile name text",
        "Refused in mesh (E036): there is no Nix store; use `mesh.file` with `content`.",
    ),
    (
        "toJSON",
        "builtins.toJSON value",
        "The value as JSON text (secrets are refused).",
    ),
    (
        "toPath",
        "builtins.toPath string",
        "An absolute path string, made canonical.",
    ),
    (
        "toString",
        "toString value",
        "A string from a string, path, number, Boolean, null or list (elements joined with spaces).",
    ),
    (
        "toXML",
        "builtins.toXML value",
        "The value as Nix's XML format.",
    ),
    (
        "trace",
        "builtins.trace message value",
        "Prints `message` to the log (`meshc eval` shows it on stderr) and returns `value`.",
    ),
    ("true", "true", "The Boolean true."),
    (
        "tryEval",
        "builtins.tryEval expression",
        "`{ success = true; value; }`, or `{ success = false; value = false; }` if it throws or fails an assertion.",
    ),
    (
        "typeOf",
        "builtins.typeOf value",
        "The name of the value's type: `\"int\"`, `\"string\"`, `\"set\"`, `\"list\"`, `\"lambda\"`, ...",
    ),
    (
        "unsafeDiscardOutputDependency",
        "builtins.unsafeDiscardOutputDependency string",
        "Refused in mesh (E036): there are no derivations.",
    ),
    (
        "unsafeDiscardStringContext",
        "builtins.unsafeDiscardStringContext string",
        "Returns `string` unchanged: mesh strings carry no store context.",
    ),
    (
        "unsafeGetAttrPos",
        "builtins.unsafeGetAttrPos name set",
        "`{ file; line; column; }` of where attribute `name` of `set` is defined, or null.",
    ),
    (
        "warn",
        "builtins.warn message value",
        "Prints `evaluation warning: message` and returns `value`, as `trace` does (newer than Nix 2.8).",
    ),
    (
        "zipAttrsWith",
        "builtins.zipAttrsWith f sets",
        "A set mapping each name found in `sets` to `f name [ values of that name ]`.",
    ),
];

/// The documentation of one builtin.
pub fn lookup(name: &str) -> Option<(&'static str, &'static str)> {
    BUILTINS
        .binary_search_by(|(known, _, _)| known.cmp(&name))
        .ok()
        .map(|index| (BUILTINS[index].1, BUILTINS[index].2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_is_documented_and_the_table_is_sorted() {
        assert!(BUILTINS.windows(2).all(|pair| pair[0].0 < pair[1].0));
        let machine = lang::Machine::new(
            std::rc::Rc::new(lang::MemoryLoader::new()),
            Vec::new(),
            lang::Limits::default(),
        );
        let Some(lang::Value::Attrs(builtins)) = machine.global("builtins") else {
            panic!("`builtins` is a set");
        };
        for attr in builtins.iter() {
            let name = String::from_utf8_lossy(&attr.name).into_owned();
            assert!(
                lookup(&name).is_some(),
                "builtin `{name}` has no documentation"
            );
        }
    }
}
