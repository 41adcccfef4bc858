//! The evaluation limits of `meshc build`, `check` and `eval` as the command line
//! gives them (`--max-steps N`, `--max-memory SIZE`), read into [`lang::Limits`].
//! Parses text only; what the limits mean is `lang::eval`'s.

pub use lang::Limits;
pub use lang::eval::{DEFAULT_MAX_MEMORY, DEFAULT_MAX_STEPS};

/// A step count: a positive whole number.
pub fn parse_steps(text: &str) -> Result<u64, String> {
    match text.replace('_', "").parse::<u64>() {
        Ok(steps) if steps > 0 => Ok(steps),
        _ => Err(format!(
            "--max-steps takes a positive whole number of steps, not `{text}`"
        )),
    }
}

/// A size in bytes: a positive whole number, optionally followed by `K`, `M` or `G`
/// (powers of 1024; `KiB`, `MiB`, `GiB` and `KB`, `MB`, `GB` mean the same).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let refuse = || {
        format!(
            "--max-memory takes a size in bytes such as `8G`, `512M` or `1048576`, not `{text}`"
        )
    };
    let trimmed = text.trim();
    let digits_end = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (digits, unit) = trimmed.split_at(digits_end);
    let multiplier: u64 = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        _ => return Err(refuse()),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|count| count.checked_mul(multiplier))
        .filter(|bytes| *bytes > 0)
        .ok_or_else(refuse)
}

/// [`Limits::default`] with the bounds the command line gave.
pub fn with(max_steps: Option<u64>, max_memory: Option<u64>) -> Limits {
    let defaults = Limits::default();
    Limits {
        max_steps: max_steps.or(defaults.max_steps),
        max_memory: max_memory.or(defaults.max_memory),
        ..defaults
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("8G"), Ok(8 << 30));
        assert_eq!(parse_size("512m"), Ok(512 << 20));
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        assert!(parse_size("0").is_err());
        assert!(parse_size("lots").is_err());
        assert!(parse_size("8T").is_err());
        assert!(parse_size("99999999999999999999G").is_err());
    }

    #[test]
    fn steps_are_positive_whole_numbers() {
        assert_eq!(parse_steps("2_000_000_000"), Ok(2_000_000_000));
        assert!(parse_steps("0").is_err());
        assert!(parse_steps("-5").is_err());
    }

    #[test]
    fn limits_not_given_are_the_defaults() {
        let limits = with(Some(5), None);
        assert_eq!(limits.max_steps, Some(5));
        assert_eq!(limits.max_memory, Some(DEFAULT_MAX_MEMORY));
        assert_eq!(with(None, None).max_steps, Some(DEFAULT_MAX_STEPS));
    }
}
