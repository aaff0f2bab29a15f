//! The years a date of mail may have: 1970 to 9999 in UTC, the range every database
//! backend stores. A parsed date outside it is not used.

use chrono::{DateTime, Datelike, Utc};

/// The first year stored.
pub const FIRST_YEAR: i32 = 1970;

/// The last year stored.
pub const LAST_YEAR: i32 = 9999;

/// Whether every backend stores `at`.
pub fn in_range(at: &DateTime<Utc>) -> bool {
    (FIRST_YEAR..=LAST_YEAR).contains(&at.year())
}
