//! A binary's registry of error codes, declared by `codes!`: each code's number and
//! title come from one exhaustive `match` each (tvix's `ErrorKind::code`), so a code
//! cannot exist without both, and `TABLE` lists them for the tests that require a book
//! page per code. Holds the mechanism only; the codes are the binaries'.

/// One error code of a registry `codes!` declared.
pub trait Code: Copy + std::fmt::Display + 'static {
    /// `E5NN`.
    fn as_str(self) -> &'static str;
    /// The short title (the heading of the code's book page).
    fn title(self) -> &'static str;
}

/// Declares, in the module it is used in, the enum `Code` with the variants given,
/// its exhaustive `as_str` and `title` (also as [`Code`](crate::Code)), `Display` (the
/// number) and `TABLE`, every code with its number and title in the order given.
/// Attributes before the first code (its doc comment) go on the enum.
///
/// ```
/// problems::codes! {
///     /// One error code of a tool.
///     Unreadable = "E700", "the input cannot be read";
///     Malformed = "E701", "the input is not what the tool reads";
/// }
///
/// assert_eq!(Code::Malformed.as_str(), "E701");
/// assert_eq!(Code::Unreadable.to_string(), "E700");
/// assert_eq!(TABLE[1], (Code::Malformed, "E701", "the input is not what the tool reads"));
/// ```
#[macro_export]
macro_rules! codes {
    ($(#[$attribute:meta])* $($name:ident = $number:literal, $title:literal;)*) => {
        $(#[$attribute])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $($name,)*
        }

        impl Code {
            /// The code's number (`E5NN`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$name => $number,)*
                }
            }

            /// The short title (the heading of the code's book page).
            pub fn title(self) -> &'static str {
                match self {
                    $(Code::$name => $title,)*
                }
            }
        }

        impl $crate::Code for Code {
            fn as_str(self) -> &'static str {
                Code::as_str(self)
            }

            fn title(self) -> &'static str {
                Code::title(self)
            }
        }

        impl ::std::fmt::Display for Code {
            fn fmt(&self, formatter: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                formatter.write_str(self.as_str())
            }
        }

        /// Every code with its number and title, in number order.
        pub const TABLE: &[(Code, &str, &str)] = &[$((Code::$name, $number, $title),)*];
    };
}

#[cfg(test)]
mod tests {
    use crate::test_codes::{Code, TABLE};

    #[test]
    fn a_registry_gives_each_code_its_number_and_title_once() {
        assert_eq!(
            TABLE,
            &[
                (Code::Unreadable, "E700", "the input cannot be read"),
                (
                    Code::Malformed,
                    "E701",
                    "the input is not what the tool reads"
                )
            ]
        );
        for (code, number, title) in TABLE {
            assert_eq!(code.as_str(), *number);
            assert_eq!(code.title(), *title);
            assert_eq!(code.to_string(), *number);
            assert_eq!(crate::Code::as_str(*code), *number);
            assert_eq!(crate::Code::title(*code), *title);
        }
    }
}
