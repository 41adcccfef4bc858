//! The one registry of diagnostic codes for the language and the compiler, in blocks
//! per phase: E0xx syntax and evaluation, E1xx resolution, E2xx settings and
//! contributions, E3xx credentials and secrets, E4xx shapes and plans, E9xx internal.
//! A code is never reused; each has a page under `book/src/errors/`.

use std::fmt;

impl fmt::Display for Code {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// Declares the registry: one variant of [`Code`] per entry, with its number and its
/// title in two exhaustive `match`es (tvix's `ErrorKind::code`), so that a code cannot
/// exist without both; `REGISTRY` lists them all for the tests that check every code
/// has a book page and a failing case. Each entry is also a constant of this module
/// (`codes::NOT_A_REPOSITORY`), the name diagnostics use.
macro_rules! codes {
    ($($name:ident = $code:literal, $title:literal;)*) => {
        /// One diagnostic code of the language and the compiler.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[allow(non_camel_case_types)] // the variants are the registry's names
        pub enum Code {
            $($name,)*
        }

        impl Code {
            /// `E0NN` .. `E9NN`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$name => $code,)*
                }
            }

            /// The short title of this code (the heading of its book page).
            pub fn title(self) -> &'static str {
                match self {
                    $(Code::$name => $title,)*
                }
            }
        }

        $(pub const $name: Code = Code::$name;)*

        /// Every code with its title, in the registry's order.
        pub const REGISTRY: &[(Code, &str)] = &[$((Code::$name, $title),)*];
    };
}

codes! {
    // E0xx: syntax
    SYNTAX_ERROR = "E001", "syntax error";
    UNTERMINATED_STRING = "E002", "unterminated string";
    UNTERMINATED_COMMENT = "E003", "unterminated comment";
    INVALID_INTEGER = "E004", "number literal out of range";
    PATH_TRAILING_SLASH = "E005", "path with a trailing slash";
    NESTED_TOO_DEEPLY = "E006", "expression nested too deeply";
    SEARCH_PATH = "E007", "search paths are not supported";
    DUPLICATE_ATTRIBUTE = "E008", "attribute defined twice";
    DYNAMIC_ATTRIBUTE_NOT_ALLOWED = "E009", "dynamic attribute where only static names are allowed";
    UNDEFINED_VARIABLE = "E010", "undefined variable";
    DUPLICATE_FORMAL = "E011", "duplicate function argument";
    HOME_PATH = "E012", "home-relative paths are not supported";
    // E02x-E05x: evaluation
    TYPE_MISMATCH = "E020", "value of the wrong type";
    MISSING_ATTRIBUTE = "E021", "attribute missing";
    UNEXPECTED_ARGUMENT = "E022", "function called with an unexpected argument";
    MISSING_ARGUMENT = "E023", "function called without a required argument";
    NOT_A_FUNCTION = "E024", "value called as a function is not one";
    INTEGER_OVERFLOW = "E025", "integer overflow";
    DIVISION_BY_ZERO = "E026", "division by zero";
    INFINITE_RECURSION = "E027", "infinite recursion";
    TOO_DEEP = "E028", "evaluation nested too deeply";
    THROWN = "E029", "error thrown by `throw`";
    ABORTED = "E030", "evaluation aborted by `abort`";
    ASSERTION_FAILED = "E031", "assertion failed";
    INDEX_OUT_OF_BOUNDS = "E032", "list index out of bounds";
    EMPTY_LIST = "E033", "list is empty";
    OUTSIDE_REPOSITORY = "E034", "file outside the repository";
    FILE_UNREADABLE = "E035", "file cannot be read";
    UNSUPPORTED_FEATURE = "E036", "Nix feature left out of the mesh language";
    PATH_IN_STRING = "E037", "path interpolated into a string";
    NOT_COMPARABLE = "E038", "values cannot be compared";
    NOT_COERCIBLE = "E039", "value cannot be turned into a string";
    INVALID_REGEX = "E040", "invalid regular expression";
    INVALID_JSON = "E041", "value cannot be converted to or from JSON or TOML";
    INVALID_ARGUMENT = "E042", "invalid argument to a builtin";
    BUDGET_EXCEEDED = "E043", "evaluation budget exceeded";
    OPAQUE_MISUSE = "E044", "secret used where only a shape may take it";
    VALUE_TOO_LARGE = "E045", "value too large";
    MEMORY_EXCEEDED = "E046", "evaluation memory bound exceeded";
    // E05x: meshc's own tools: the interactive session, the formatter, the man pages,
    // standard output, the language server
    UNKNOWN_REPL_NODE = "E050", "`meshc repl --node` names no node of the inventory";
    UNKNOWN_REPL_COMMAND = "E051", "unknown `meshc repl` command";
    FORMATTER_REFUSED = "E052", "file the formatter cannot format";
    FORMATTED_FILE_UNWRITABLE = "E053", "formatted file cannot be written";
    FORMATTING_TOO_SLOW = "E054", "file the formatter would take too long on";
    MAN_PAGES_UNWRITABLE = "E055", "man pages cannot be written";
    OUTPUT_STREAM_UNWRITABLE = "E056", "standard output cannot be written";
    REPL_INPUT_UNREADABLE = "E057", "`meshc repl`: standard input cannot be read";
    LANGUAGE_SERVER_CONNECTION = "E058", "`meshc lsp`: the editor's connection failed";
    NO_EVALUATION_THREAD = "E059", "no thread could be started to evaluate on";
    // E1xx: the repository, the inventory and resolution
    NOT_A_REPOSITORY = "E100", "not a mesh repository";
    UNKNOWN_MODULE = "E101", "unknown module";
    REQUIRES_CYCLE = "E102", "modules require each other in a cycle";
    UNKNOWN_INVENTORY_KEY = "E103", "unknown key in the inventory";
    INVALID_INVENTORY_VALUE = "E104", "inventory value of the wrong type";
    INVALID_MODULE = "E105", "module file is not a module";
    UNKNOWN_MODULE_FIELD = "E106", "unknown field in a module";
    INVALID_NODE_NAME = "E107", "invalid node name";
    SHADOWED_MODULE = "E108", "repository module shadows a standard module";
    STAGE_ARGUMENT = "E109", "module field asks for an argument its stage cannot know";
    INVALID_MODULE_FIELD = "E110", "module field of the wrong type";
    DUPLICATE_ASSIGNMENT = "E111", "module assigned twice to a node";
    MODULE_NAME_NOT_IDENTIFIER = "E112", "module directory name is not an identifier";
    CURRENT_DIRECTORY_UNREADABLE = "E113", "the current directory cannot be read";
    UNKNOWN_NODE = "E120", "unknown node";
    UNKNOWN_CODE = "E121", "unknown diagnostic code";
    CACHE_UNREADABLE = "E122", "build cache unreadable or damaged";
    CACHE_FOREIGN = "E123", "build cache made by another compiler or for another repository";
    CACHE_PLAN_CHANGED = "E124", "plan in the output differs from the one the cache recorded";
    CACHE_INPUT_MOVED = "E125", "a file changed while the build read it";
    // E2xx: settings and contributions
    UNKNOWN_SETTING = "E200", "override of an unknown setting";
    SETTING_FOR_ABSENT_MODULE = "E201", "settings for a module that is not on the node";
    SETTING_TYPE_MISMATCH = "E202", "setting value of the wrong type";
    INVALID_OPTION = "E203", "invalid setting declaration";
    DEFAULT_TYPE_MISMATCH = "E204", "setting default of the wrong type";
    SETTING_WITHOUT_VALUE = "E205", "setting without default is not set";
    CONTRIBUTION_TO_UNKNOWN_MODULE = "E206", "contribution to a module that does not exist";
    CONTRIBUTION_TO_UNKNOWN_COLLECTION = "E207", "contribution to a collection that is not declared";
    CONTRIBUTION_TYPE_MISMATCH = "E208", "contribution of the wrong type";
    CONTRIBUTION_CONFLICT = "E209", "two modules contribute the same key";
    INVALID_COLLECTION = "E210", "invalid collection declaration";
    SECRET_IN_FACTS = "E211", "secret in a provider's facts";
    INVALID_VHOST = "E212", "a consumer's `vhost` is not a valid vhost name";
    INVALID_PERMISSION = "E213", "a consumer's permission is not a valid regular expression";
    ACCESS_NOT_TAKEN = "E214", "`vhost` or `permissions` for a provider whose grants take none";
    ACCESS_MISSING = "E215", "no `vhost` for a provider whose grants need one";
    PATH_FOR_FACTS_ONLY = "E216", "credential `path` for a provider of facts only";
    CONSUMPTION_WITHOUT_PATH = "E217", "consumption of a provider with logins has no `path`";
    // E3xx: credentials, secrets, mirrors and artifacts
    NO_PROVIDER = "E300", "no node provides the service a consumer asks for";
    AMBIGUOUS_PROVIDER = "E301", "several nodes provide the service and no `from` chooses one";
    NOT_A_PROVIDER = "E302", "`from` names a node that does not provide the service";
    INVALID_DECLARATION = "E303", "invalid `provides`, `consumes`, `needs`, `mirrors` or `artifacts` entry";
    SECRET_NOT_MADE = "E304", "need or grant not made (`--locked`)";
    SECRET_STORE = "E305", "sealed store cannot be read or written";
    UNPINNED_MIRROR = "E306", "mirror not pinned in `mesh.lock`";
    UNBUILT_ARTIFACT = "E307", "artifact not built, or changed since it was built";
    INVALID_LOCK = "E308", "invalid `mesh.lock`";
    LOGIN_CONFLICT = "E309", "two consumers would get the same login";
    MIRROR_WITHOUT_REGISTRY = "E310", "mirrored image but no registry in the inventory";
    NAME_NOT_IDENTIFIER = "E311", "need, consume or provide name is not an identifier";
    SECRET_STORE_LINK = "E312", "sealed store reached through a symbolic link";
    ARTIFACT_LINK_ESCAPES = "E313", "artifact link points outside its directory";
    INVALID_SECRET_MODE = "E314", "`mode` of a need or credential is not an octal mode";
    ARTIFACT_NOT_STORED = "E315", "artifact cannot be archived or stored";
    BUILD_RECORD_UNREADABLE = "E316", "the builder's record cannot be read";
    LOCK_UNWRITABLE = "E317", "`mesh.lock` cannot be written";
    INVALID_LOGIN = "E318", "a consumer's login is not a name its provider can grant";
    PRIVATE_KEY = "E320", "an age private key where a public key belongs";
    RESEAL_IDENTITY_UNREADABLE = "E321", "`meshc secrets reseal`: the old identity cannot be read";
    RESEAL_WRONG_IDENTITY = "E322", "`meshc secrets reseal`: the identity does not open the node's values";
    RESEAL_UNKNOWN_NODE = "E323", "`meshc secrets reseal`: no such node";
    LOCK_UNREADABLE = "E324", "`mesh.lock` cannot be read";
    // E4xx: shapes and plans
    INVALID_SHAPE = "E400", "invalid shape";
    SHAPE_CONFLICT = "E401", "two shapes declare the same resource differently";
    UNDECLARED_DIRECTORY = "E402", "parent directory is not declared";
    UNDECLARED_USER = "E403", "owner is not declared";
    UNDECLARED_MOUNT_SOURCE = "E404", "container mount source is not declared";
    NOT_A_SHAPE_LIST = "E405", "`shapes` did not return a list of shapes";
    UNDECLARED_GROUP = "E406", "group is not declared";
    OUTPUT_UNWRITABLE = "E407", "build output cannot be written";
    BUILD_UNREADABLE = "E408", "build output cannot be read";
    OUTPUT_LINK = "E409", "build output directory is a symbolic link or not the builder's";
    UNKNOWN_AFTER = "E410", "`after` names no unit of the node and no systemd target";
    BUILD_OF_ANOTHER_REPOSITORY = "E420", "build output was made from another repository";
    NOT_A_BUILD_OUTPUT = "E421", "`--out` holds files that are not a build";
    BUILD_NOT_MADE_HERE = "E422", "the repository's default build was not made by this user's `meshc build`";
    NO_SUCH_DEPLOY_TARGET = "E430", "`meshc deploy --on` selects no node";
    // E44x: plans and builds through the broker
    BROKER_UNAVAILABLE = "E440", "the broker cannot be reached or refused a request";
    // E9xx: internal
    INTERNAL = "E900", "internal error (please report)";
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_and_well_formed() {
        let mut seen = HashSet::new();
        for (code, title) in REGISTRY {
            let number = code.as_str();
            assert!(seen.insert(number), "code {code} is registered twice");
            assert!(number.len() == 4 && number.starts_with('E'), "{code}");
            assert!(number[1..].chars().all(|c| c.is_ascii_digit()), "{code}");
            assert!(!title.is_empty());
            assert_eq!(code.title(), *title);
        }
    }
}
