//! Age private keys (`AGE-SECRET-KEY-1...`, what `age-keygen` writes) found where a
//! public key belongs. One pasted into the inventory is refused without printing any
//! of it, and every source text shown beside a diagnostic has it blotted out, so no
//! part of a leaked identity reaches a terminal, a CI log or an editor.

use std::borrow::Cow;

/// The prefix, compared without regard to case (bech32 may be written either way).
const PREFIX: &[u8] = b"AGE-SECRET-KEY-1";

/// Where the private keys in `text` start and end (byte ranges): the prefix and the
/// run of bech32 characters after it.
fn ranges(text: &[u8]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut start = 0;
    while start + PREFIX.len() <= text.len() {
        let candidate = &text[start..start + PREFIX.len()];
        if candidate.eq_ignore_ascii_case(PREFIX) {
            let end = start
                + PREFIX.len()
                + text[start + PREFIX.len()..]
                    .iter()
                    .take_while(|byte| byte.is_ascii_alphanumeric())
                    .count();
            found.push((start, end));
            start = end;
        } else {
            start += 1;
        }
    }
    found
}

/// Does `text` hold an age private key?
pub fn contains_private_key(text: &str) -> bool {
    !ranges(text.as_bytes()).is_empty()
}

/// Does `bytes` hold an age private key as `age-keygen` writes it, in capitals, or in
/// small letters (the other spelling bech32 allows; a key in mixed case is not a
/// key)? The prefix alone (a script matching on it, a line of documentation) is
/// not one: a key has 58 characters after it. Fast enough for every byte of every
/// plan: two SIMD searches.
pub fn holds_private_key(bytes: &[u8]) -> bool {
    // most texts of a plan (names, modes, owners, paths) are shorter than any key,
    // and a search's setup costs more than such a text
    bytes.len() >= SHORTEST_KEY && (holds_age_private_key(bytes) || holds_pem_private_key(bytes))
}

/// The fewest bytes a key takes: an age key's prefix and data (a PEM key's header
/// and body are longer).
const SHORTEST_KEY: usize = PREFIX.len() + KEY_DATA;

/// [`holds_private_key`] for age keys.
fn holds_age_private_key(bytes: &[u8]) -> bool {
    static FINDERS: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 2]> =
        std::sync::LazyLock::new(|| {
            [
                memchr::memmem::Finder::new(PREFIX),
                memchr::memmem::Finder::new(b"age-secret-key-1"),
            ]
        });
    FINDERS.iter().any(|finder| {
        finder.find_iter(bytes).any(|start| {
            bytes[start + PREFIX.len()..]
                .iter()
                .take(KEY_DATA)
                .take_while(|byte| byte.is_ascii_alphanumeric())
                .count()
                == KEY_DATA
        })
    })
}

/// The bech32 characters of an age private key after its prefix (data and checksum).
const KEY_DATA: usize = 58;

/// Does `bytes` hold a PEM private key (`-----BEGIN ... PRIVATE KEY-----`, what
/// `openssl genpkey` and `ssh-keygen` write) with a body? A header alone (a script
/// looking for one, documentation) is not one: the shortest key's body (ed25519,
/// PKCS #8) has 64 base64 characters. One SIMD search when there is none.
fn holds_pem_private_key(bytes: &[u8]) -> bool {
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"PRIVATE KEY"));
    FINDER.find(bytes).is_some()
        && pem_ranges(bytes)
            .into_iter()
            .any(|(start, end)| pem_body_length(&bytes[start..end]) >= PEM_BODY)
}

/// The fewest base64 characters a PEM private key's body has.
const PEM_BODY: usize = 64;

/// The base64 characters of a PEM block's body (`block` from its `BEGIN` line): from
/// after the header's dashes to the next dash.
fn pem_body_length(block: &[u8]) -> usize {
    let after_header = block
        .windows(5)
        .skip(5)
        .position(|window| window == b"-----")
        .map_or(block.len(), |at| at + 10);
    block
        .get(after_header..)
        .unwrap_or_default()
        .iter()
        .take_while(|byte| **byte != b'-')
        .filter(|byte| byte.is_ascii_alphanumeric() || **byte == b'+' || **byte == b'/')
        .count()
}

/// Where the PEM private keys in `text` start and end (byte ranges): from
/// `-----BEGIN ... PRIVATE KEY-----` to the end of its `-----END ... -----` line, or
/// to the end of the text if that is missing. An SSH host key (`ssh-keygen`'s
/// `-----BEGIN OPENSSH PRIVATE KEY-----`) pasted where its `.pub` belongs is the
/// mistake this is for; a quoted one (`\n` for each line break) is found too.
fn pem_ranges(text: &[u8]) -> Vec<(usize, usize)> {
    const BEGIN: &[u8] = b"-----BEGIN ";
    const END: &[u8] = b"-----END ";
    const DASHES: &[u8] = b"-----";
    let find = |from: usize, needle: &[u8]| {
        text.get(from..)?
            .windows(needle.len())
            .position(|window| window == needle)
            .map(|at| from + at)
    };
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(start) = find(from, BEGIN) {
        let Some(header_end) = find(start + BEGIN.len(), DASHES) else {
            break;
        };
        let header = &text[start + BEGIN.len()..header_end];
        if !(header.ends_with(b"PRIVATE KEY") || header.ends_with(b"PRIVATE KEY BLOCK")) {
            from = header_end;
            continue;
        }
        // the block is its base64 lines (line breaks as they are, or written `\n`
        // in a quoted string), and its END line if that follows them: a header
        // alone blots out no more than what looks like a key after it
        let mut end = header_end + DASHES.len();
        while end < text.len() {
            match text[end] {
                b'\\' if text.get(end + 1) == Some(&b'n') => end += 2,
                byte if byte.is_ascii_alphanumeric() || b"+/=\r\n \t".contains(&byte) => end += 1,
                _ => break,
            }
        }
        if text[end..].starts_with(END)
            && let Some(dashes) = find(end + END.len(), DASHES)
        {
            end = dashes + DASHES.len();
        }
        found.push((start, end));
        from = end;
    }
    found
}

/// `text` with every private key in it (an age key, a PEM private key block)
/// replaced by as many `*` as it has bytes, line breaks kept, so that offsets into
/// it (diagnostic spans) and its lines still point at the same bytes.
pub fn redact_private_keys(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut found = ranges(bytes);
    if text.contains("-----BEGIN ") {
        found.extend(pem_ranges(bytes));
        found.sort_unstable();
    }
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, end) in found {
        let start = start.max(last);
        if start >= end {
            continue;
        }
        // every range starts and ends at an ASCII byte (a key's first letter or
        // dash, its last letter or dash), so on character boundaries; a PEM block
        // may hold other characters, blotted out one `*` a byte
        out.push_str(&text[last..start]);
        out.extend(
            text.as_bytes()[start..end]
                .iter()
                .map(|byte| if *byte == b'\n' { '\n' } else { '*' }),
        );
        last = end;
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Texts shorter than [`SHORTEST_KEY`] are not searched: no key of either kind
    /// is that short, and the shortest of each is still found.
    #[test]
    fn the_shortest_keys_are_found() {
        let pem_shortest = format!("-----BEGIN PRIVATE KEY-----{}", "A".repeat(PEM_BODY));
        assert!(SHORTEST_KEY <= pem_shortest.len());
        assert!(holds_private_key(pem_shortest.as_bytes()));
        let age_shortest = format!("AGE-SECRET-KEY-1{}", "Q".repeat(KEY_DATA));
        assert_eq!(age_shortest.len(), SHORTEST_KEY);
        assert!(holds_private_key(age_shortest.as_bytes()));
        assert!(!holds_private_key(
            &age_shortest.as_bytes()[..SHORTEST_KEY - 1]
        ));
    }

    /// A PEM private key with its body is one, in a file's text or quoted; a header
    /// alone, a public key or a certificate is not.
    #[test]
    fn a_pem_private_key_with_its_body_is_held() {
        let body = "MC4CAQAwBQYDK2VwBCIEIJ+3tZ2XbJ0aYcQmUhoJpS9dSd9m8yG8ZVvZ3w2kq1Xb";
        let key = format!("-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n");
        assert!(holds_private_key(key.as_bytes()));
        assert!(holds_private_key(key.replace('\n', "\\n").as_bytes()));
        let openssh = format!(
            "-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n{body}\n-----END OPENSSH PRIVATE KEY-----"
        );
        assert!(holds_private_key(openssh.as_bytes()));
        assert!(!holds_private_key(
            b"grep -q '-----BEGIN PRIVATE KEY-----' \"$file\""
        ));
        let public = format!("-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----\n");
        assert!(!holds_private_key(public.as_bytes()));
        let certificate =
            format!("-----BEGIN CERTIFICATE-----\n{body}{body}\n-----END CERTIFICATE-----\n");
        assert!(!holds_private_key(certificate.as_bytes()));
    }

    const KEY: &str = "AGE-SECRET-KEY-1QQPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE";

    /// What plans are scanned for: a whole key, not its prefix alone.
    #[test]
    fn a_plan_holds_a_key_only_with_its_data() {
        assert!(holds_private_key(KEY.as_bytes()));
        assert!(holds_private_key(KEY.to_lowercase().as_bytes()));
        assert!(!holds_private_key(
            b"case \"$k\" in AGE-SECRET-KEY-1*) exit 1;; esac"
        ));
        assert!(!holds_private_key(
            &KEY.as_bytes()[..PREFIX.len() + KEY_DATA - 1]
        ));
    }

    #[test]
    fn keys_are_found_in_any_case_and_blotted_out_byte_for_byte() {
        let text = format!("key = \"{KEY}\";\nother = \"{}\";", KEY.to_lowercase());
        assert!(contains_private_key(&text));
        assert!(!contains_private_key("age1qqqq AGE-SECRET-KEY"));
        let redacted = redact_private_keys(&text);
        assert_eq!(redacted.len(), text.len());
        assert!(!redacted.to_lowercase().contains("secret"), "{redacted}");
        assert!(redacted.starts_with("key = \"*****"));
        assert_eq!(redact_private_keys("plain"), "plain");
    }

    /// An SSH private key pasted where its `.pub` belongs was printed whole, in the
    /// message (quoted) and in the source drawn beside it.
    #[test]
    fn pem_private_keys_are_blotted_out_with_their_lines_kept() {
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQyNTUxOQAAACD4oN9V\n-----END OPENSSH PRIVATE KEY-----";
        let source = format!("key = \"{key}\";\nnext = 1;");
        let redacted = redact_private_keys(&source);
        assert_eq!(redacted.len(), source.len());
        assert_eq!(redacted.lines().count(), source.lines().count());
        assert!(
            !redacted.contains("b3Bl") && !redacted.contains("OPENSSH"),
            "{redacted}"
        );
        assert!(redacted.ends_with("\";\nnext = 1;"), "{redacted}");
        // quoted in a message, each line break written `\n`
        let quoted = format!("not an age recipient: {key:?}");
        let redacted = redact_private_keys(&quoted);
        assert!(
            !redacted.contains("b3Bl") && !redacted.contains("QyNT"),
            "{redacted}"
        );
        // without its end, to the end of its base64 lines and no further (a header
        // in a script does not blot out what follows); a public key is left alone
        let cut = redact_private_keys("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n\"; then\nfi");
        assert!(!cut.contains("MIIE"), "{cut}");
        assert!(cut.ends_with("\"; then\nfi"), "{cut}");
        let pgp =
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----";
        assert!(!redact_private_keys(pgp).contains("lQOYBF"));
        let public = "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----";
        assert_eq!(redact_private_keys(public), public);
    }
}
