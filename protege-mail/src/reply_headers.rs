//! What a reply to a message needs of its headers besides its addresses, kept with the
//! message when it is stored: the ids it refers to, where its sender asks replies to go,
//! and what the receiving servers reported of its sender (§18).

use serde::{Deserialize, Serialize};

/// The most ids of a `References` header kept (the first and the last ones): a reply names
/// at most 20.
pub const MAX_KEPT_REFERENCES: usize = 40;

/// The most `Authentication-Results` values kept (the topmost ones decide).
pub const MAX_KEPT_AUTH_RESULTS: usize = 8;

/// The headers of a message a reply to it is built from. Stored as JSON in
/// `messages.reply_headers`; every list empty (the default) when the message had none of
/// these headers (and for mail not read from RFC 5322, such as fixtures).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyHeaders {
    /// The ids of its `References` header, as written (oldest first, angle brackets
    /// included), at most [`MAX_KEPT_REFERENCES`]: the first and the last ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<String>,
    /// The addresses of its `Reply-To` header in header form, group members included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reply_to: Vec<String>,
    /// Whether its `Reply-To` used the group syntax (`team: a@x, b@y;`): such a Reply-To is
    /// never honoured.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reply_to_group: bool,
    /// The values of its `Authentication-Results` headers, top first, unfolded, at most
    /// [`MAX_KEPT_AUTH_RESULTS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authentication_results: Vec<String>,
}

impl ReplyHeaders {
    /// Whether it holds nothing (stored as `NULL`).
    pub fn is_empty(&self) -> bool {
        self.references.is_empty()
            && self.reply_to.is_empty()
            && !self.reply_to_group
            && self.authentication_results.is_empty()
    }

    /// The JSON stored for it; `None` when it is empty.
    pub fn to_stored(&self) -> Option<String> {
        (!self.is_empty()).then(|| serde_json::to_string(self).unwrap_or_default())
    }

    /// Reads what [`to_stored`](Self::to_stored) wrote; a `NULL` or unreadable value is
    /// empty (nothing a reply could rely on).
    pub fn from_stored(stored: Option<&str>) -> Self {
        stored
            .and_then(|json| serde_json::from_str(json).ok())
            .unwrap_or_default()
    }

    /// `ids` kept as [`references`](Self::references) keeps them: all of them when there
    /// are at most `max`, else the first and the last `max - 1`.
    pub fn capped(ids: Vec<String>, max: usize) -> Vec<String> {
        if ids.len() <= max || max == 0 {
            return ids;
        }
        let mut kept = Vec::with_capacity(max);
        kept.push(ids[0].clone());
        kept.extend_from_slice(&ids[ids.len() - (max - 1)..]);
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_headers_are_stored_as_null_and_read_back() {
        assert_eq!(ReplyHeaders::default().to_stored(), None);
        assert_eq!(ReplyHeaders::from_stored(None), ReplyHeaders::default());
        assert_eq!(
            ReplyHeaders::from_stored(Some("not json")),
            ReplyHeaders::default()
        );
        let headers = ReplyHeaders {
            references: vec!["<a@x>".into()],
            reply_to: vec!["Kim <kim@example.com>".into()],
            reply_to_group: true,
            authentication_results: vec!["mx.acme.test; dmarc=pass header.from=example.com".into()],
        };
        let stored = headers.to_stored().unwrap();
        assert_eq!(
            stored,
            r#"{"references":["<a@x>"],"reply_to":["Kim <kim@example.com>"],"reply_to_group":true,"authentication_results":["mx.acme.test; dmarc=pass header.from=example.com"]}"#
        );
        assert_eq!(ReplyHeaders::from_stored(Some(&stored)), headers);
    }

    #[test]
    fn capping_keeps_the_first_and_the_last() {
        let ids: Vec<String> = (1..=5).map(|i| format!("<{i}@x>")).collect();
        assert_eq!(ReplyHeaders::capped(ids.clone(), 5), ids);
        assert_eq!(
            ReplyHeaders::capped(ids, 3),
            vec!["<1@x>".to_owned(), "<4@x>".into(), "<5@x>".into()]
        );
    }
}
