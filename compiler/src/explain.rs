//! The book's error pages (`book/src/errors/CODE.md`), embedded at build time for
//! `meshc explain`. Must not read files at run time: the binary works anywhere.

include!(concat!(env!("OUT_DIR"), "/error_pages.rs"));

/// The markdown page of `code` (`E101`, or `e101`), if the book has one.
pub fn error_page(code: &str) -> Option<&'static str> {
    let wanted = code.trim().to_ascii_uppercase();
    PAGES
        .iter()
        .find(|(name, _)| *name == wanted)
        .map(|(_, page)| *page)
}

/// Every code the book has a page for, in order.
pub fn error_page_codes() -> impl Iterator<Item = &'static str> {
    PAGES.iter().map(|(code, _)| *code)
}

/// The help for a code without a page: the closest codes, or where the list is.
pub fn unknown_code_help(code: &str) -> String {
    let wanted = code.trim().to_ascii_uppercase();
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
    }
}
