//! The waits between a provider's attempts: exponential backoff with full jitter, and the
//! provider's own `retry-after`.

use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use reqwest::header::HeaderMap;

/// The wait before attempt `n + 1` after `n` failed ones (`n` ≥ 1): a random duration
/// between zero and `min(cap, base × 2^(n−1))` ("full jitter"), so clients that failed
/// together do not come back together.
pub(crate) fn backoff(base: Duration, cap: Duration, n: u32) -> Duration {
    let factor = 2u32.saturating_pow(n.saturating_sub(1));
    let ceiling = base.saturating_mul(factor).min(cap);
    ceiling.mul_f64(unit_random())
}

/// A random number in `[0, 1]`; 1 (the whole ceiling) when the system has no randomness.
fn unit_random() -> f64 {
    match getrandom::u64() {
        // 53 random bits: every value is exact in an f64.
        Ok(bits) => (bits >> 11) as f64 / (1u64 << 53) as f64,
        Err(_) => 1.0,
    }
}

/// How long the provider asks to wait, from `retry-after-ms` (milliseconds, OpenAI) and
/// `retry-after` (seconds or an HTTP date, RFC 9110 §10.2.3); the longer one when both are
/// present. A date in the past is zero; an unreadable value is ignored. Only the IMF-fixdate
/// form of an HTTP date is read (`Sun, 06 Nov 1994 08:49:37 GMT`), the one servers send.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let ms = text("retry-after-ms")
        .and_then(|v| v.parse::<f64>().ok())
        .and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok());
    let after = text("retry-after").and_then(|v| {
        if let Ok(seconds) = v.parse::<f64>() {
            return Duration::try_from_secs_f64(seconds).ok();
        }
        let at = DateTime::parse_from_rfc2822(v).ok()?.with_timezone(&Utc);
        let now: DateTime<Utc> = now.into();
        Some((at - now).to_std().unwrap_or(Duration::ZERO))
    });
    ms.max(after)
}

/// A duration as a person writes it: `300ms`, `10s`, `1.5s`, `2m`.
pub(crate) fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn backoff_stays_under_its_ceiling() {
        let base = Duration::from_millis(500);
        let cap = Duration::from_secs(30);
        for n in 1..=12 {
            let ceiling = (base * 2u32.pow(n - 1)).min(cap);
            for _ in 0..50 {
                assert!(backoff(base, cap, n) <= ceiling, "attempt {n}");
            }
        }
        assert!(backoff(base, cap, u32::MAX) <= cap);
    }

    #[test]
    fn retry_after_reads_seconds_dates_and_milliseconds() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(
            retry_after(&headers(&[("retry-after", "7")]), now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:50:07 GMT")]),
                now
            ),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:00:00 GMT")]),
                now
            ),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "1500")]), now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after-ms", "1500"), ("retry-after", "2")]),
                now
            ),
            Some(Duration::from_secs(2))
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-3")]), now), None);
        assert_eq!(retry_after(&headers(&[]), now), None);
    }

    #[test]
    fn durations_read_as_written() {
        assert_eq!(human(Duration::from_millis(300)), "300ms");
        assert_eq!(human(Duration::from_secs(10)), "10s");
        assert_eq!(human(Duration::from_millis(1500)), "1.5s");
        assert_eq!(human(Duration::from_secs(120)), "2m");
    }
}
