//! Durations as persona files and `resolvers!` write them (`"90s"`, `"2d"`): one reader for
//! the TOML front end and the macro.

use std::time::Duration;

use crate::persona::DURATION_MAX_DAYS;

/// Why a text is not a duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurationError {
    /// It is not a positive integer and a unit.
    Malformed,
    /// It is longer than [`DURATION_MAX_DAYS`] days.
    TooLong,
}

/// Reads a duration as persona files write it: a positive integer and a unit, `s`, `m`,
/// `h` or `d` (`"90s"`, `"2d"`), at most [`DURATION_MAX_DAYS`] days.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(protege_schema::parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
/// assert!(protege_schema::parse_duration("1w").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let Some(unit) = text.chars().last() else {
        return Err(DurationError::Malformed);
    };
    let digits = &text[..text.len() - unit.len_utf8()];
    let seconds_per_unit: u64 = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return Err(DurationError::Malformed),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(DurationError::Malformed);
    }
    if digits.bytes().all(|b| b == b'0') {
        return Err(DurationError::Malformed);
    }
    let seconds = digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(seconds_per_unit))
        .ok_or(DurationError::TooLong)?;
    if seconds > DURATION_MAX_DAYS * 86_400 {
        return Err(DurationError::TooLong);
    }
    Ok(Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("11m"), Ok(Duration::from_secs(660)));
        assert_eq!(parse_duration("48h"), Ok(Duration::from_secs(48 * 3600)));
        assert_eq!(
            parse_duration("365d"),
            Ok(Duration::from_secs(365 * 86_400))
        );
        assert_eq!(parse_duration("366d"), Err(DurationError::TooLong));
        assert_eq!(
            parse_duration("99999999999999999999s"),
            Err(DurationError::TooLong)
        );
        for bad in [
            "", "s", "0s", "00m", "2", "2 d", "2D", "+2d", "-2d", "2.5h", "1w", "2dd", "²d",
        ] {
            assert_eq!(
                parse_duration(bad),
                Err(DurationError::Malformed),
                "{bad:?}"
            );
        }
    }
}
