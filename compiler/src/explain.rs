//! The book's error pages (`book/src/errors/CODE.md`), embedded at build time for
//! `meshc explain`. Must not read files at run time: the binary works anywhere.

include!(concat!(env!("OUT_DIR"), "/error_pages.rs"));

/// The markdown page of `code` (`E101`, or `e101`), if the book has one.
pub fn error_page(code: &str) -> Option<&'static str> {
    let wanted = canonical_code(code);
    PAGES
        .iter()
        .find(|(name, _)| *name == wanted)
        .map(|(_, page)| *page)
}

/// `code` as the registry writes it: in capitals, and a bare number given its `E`
/// and leading zeros (`200` is `E200`, `8` is `E008`, as `rustc --explain 308`).
fn canonical_code(code: &str) -> String {
    let code = code.trim();
    if !code.is_empty() && code.len() <= 3 && code.bytes().all(|byte| byte.is_ascii_digit()) {
        return format!("E{code:0>3}");
    }
    code.to_ascii_uppercase()
}

/// Every code the book has a page for, in order.
pub fn error_page_codes() -> impl Iterator<Item = &'static str> {
    PAGES.iter().map(|(code, _)| *code)
}

/// The help for a code without a page: the closest codes, or where the list is.
pub fn unknown_code_help(code: &str) -> String {
    let wanted = canonical_code(code);
    lang::diagnostic::did_you_mean(&wanted, error_page_codes()).unwrap_or_else(|| {
        "codes look like `E101`; the book's `errors.md` lists every one".to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_code_has_an_embedded_page() {
        for (code, _) in lang::codes::REGISTRY {
            assert!(error_page(code.as_str()).is_some(), "no page for {code}");
        }
        assert_eq!(error_page("e101"), error_page("E101"));
        assert!(error_page("E999").is_none());
        assert!(unknown_code_help("E1011").contains("`E101`"));
        // a bare number is the code with its `E`
        assert_eq!(error_page("200"), error_page("E200"));
        assert_eq!(error_page("8"), error_page("E008"));
        assert!(error_page("200").is_some());
        assert!(error_page("2000").is_none());
    }
}
