//! The direction of an imported message (see `SECURITY.md`): outbound only when it names
//! exactly one author, a persona address, and shows it did not arrive from outside.
//!
//! "Did not arrive from outside" is either no `Received` header at all (a copy of sent
//! mail, never relayed), or an `Authentication-Results` header (RFC 8601) whose
//! authserv-id the operator trusts and that reports `dmarc=pass` for the From address's
//! domain (`header.from=`). Of the `Authentication-Results` headers of trusted
//! authserv-ids, the topmost (the one the nearest trusted server added) decides: the
//! trusted server is expected to remove any header that claims its authserv-id from mail
//! it receives (RFC 8601 §5).

use std::collections::HashSet;

use super::parse::Origin;
use crate::mail::Direction;

/// How the direction of the messages of an import is decided.
#[derive(Debug, Clone)]
pub struct Directions {
    /// The persona addresses, bare and lowercased.
    own: HashSet<String>,
    /// The trusted authserv-ids, lowercased.
    trusted: Vec<String>,
    /// A direction forced on every message, or `None` to decide from the headers.
    forced: Option<Direction>,
}

impl Directions {
    /// `own`: the persona addresses (bare, lowercased); `trusted`: the authserv-ids whose
    /// `Authentication-Results` count.
    pub fn new(own: HashSet<String>, trusted: &[String], forced: Option<Direction>) -> Self {
        Self {
            own,
            trusted: trusted
                .iter()
                .map(|t| t.trim().to_lowercase())
                .filter(|t| !t.is_empty())
                .collect(),
            forced,
        }
    }

    /// The direction of a message from `origin` (its From header reads `from`), with a
    /// warning when it claims a persona address but is stored inbound; the error is why a
    /// forced outbound direction is refused.
    pub fn decide(
        &self,
        origin: &Origin,
        from: &str,
    ) -> Result<(Direction, Option<String>), String> {
        let persona = origin.from.iter().find(|a| self.own.contains(*a));
        match self.forced {
            Some(Direction::Inbound) => Ok((Direction::Inbound, None)),
            Some(Direction::Outbound) => match (persona, origin.from.len()) {
                (Some(_), 1) => Ok((Direction::Outbound, None)),
                (_, 1) => Err(format!(
                    "the From address `{}` is not a persona address; only mail a persona sent can be recorded as outbound",
                    crate::mail::one_line(from)
                )),
                _ => Err(
                    "the `From` header lists several addresses; only mail a persona sent alone can be recorded as outbound"
                        .to_owned(),
                ),
            },
            None => {
                let Some(persona) = persona else {
                    return Ok((Direction::Inbound, None));
                };
                match self.outside(origin, persona) {
                    None => Ok((Direction::Outbound, None)),
                    Some(why) => Ok((
                        Direction::Inbound,
                        Some(format!(
                            "the From address `{persona}` is a persona's but {why}: stored as inbound"
                        )),
                    )),
                }
            }
        }
    }

    /// Why a message claiming the persona address `persona` counts as arriving from
    /// outside; `None` when it does not.
    fn outside(&self, origin: &Origin, persona: &str) -> Option<String> {
        if origin.from.len() > 1 {
            return Some("the `From` header lists several addresses".to_owned());
        }
        if !origin.received {
            return None;
        }
        let domain = persona.rsplit_once('@').map_or("", |(_, d)| d);
        let trusted = topmost_trusted(&origin.auth_results, &self.trusted);
        match trusted {
            None if self.trusted.is_empty() => Some(
                "the message has a `Received` header and no authserv-id is trusted (`--trusted-authserv-id`, `[mail] trusted_authserv_ids`)"
                    .to_owned(),
            ),
            None => Some(
                "the message has a `Received` header and no `Authentication-Results` header of a trusted authserv-id"
                    .to_owned(),
            ),
            Some(results) if results.dmarc_pass(domain) => None,
            Some(results) => Some(format!(
                "the `Authentication-Results` header of `{}` reports no `dmarc=pass` for `header.from={domain}`",
                results.authserv_id
            )),
        }
    }
}

/// Of the `Authentication-Results` values `auth_results` (top first), the topmost whose
/// authserv-id is one of `trusted` (lowercased).
fn topmost_trusted(auth_results: &[String], trusted: &[String]) -> Option<AuthResults> {
    auth_results
        .iter()
        .filter_map(|value| AuthResults::parse(value))
        .find(|results| trusted.contains(&results.authserv_id))
}

/// Whether the sender of a message is authenticated (§18): of its `Authentication-Results`
/// values `auth_results` (top first), the topmost of an authserv-id in `trusted` reports
/// `dmarc=pass` with `header.from=` the domain of its From address `from` (bare). Nothing
/// else counts: not the From itself, not a `Received` header, not a DKIM signature of
/// another domain.
pub fn sender_authenticated(auth_results: &[String], trusted: &[String], from: &str) -> bool {
    let trusted: Vec<String> = trusted
        .iter()
        .map(|t| t.trim().to_lowercase())
        .filter(|t| !t.is_empty())
        .collect();
    let domain = from.rsplit_once('@').map_or("", |(_, d)| d.trim());
    topmost_trusted(auth_results, &trusted).is_some_and(|results| results.dmarc_pass(domain))
}

/// One result of an `Authentication-Results` header: method and result lowercased,
/// properties as `(name, value)` with the name lowercased.
type AuthResult = (String, String, Vec<(String, String)>);

/// The parts of one `Authentication-Results` value that count: its authserv-id and its
/// results.
#[derive(Debug)]
struct AuthResults {
    /// Lowercased.
    authserv_id: String,
    results: Vec<AuthResult>,
}

impl AuthResults {
    /// Reads `value` (unfolded): `authserv-id [version]; method=result prop=value ...; ...`,
    /// comments removed. `None` when it has no authserv-id.
    fn parse(value: &str) -> Option<Self> {
        let text = without_comments(value);
        let mut statements = text.split(';');
        let authserv_id = statements
            .next()?
            .split_whitespace()
            .next()?
            .trim_matches('"')
            .to_lowercase();
        let mut results = Vec::new();
        for statement in statements {
            let mut words = tight_equals(statement).into_iter();
            let Some((method, result)) = words.next().and_then(|w| {
                let (m, r) = w.split_once('=')?;
                Some((m.to_owned(), r.to_owned()))
            }) else {
                continue;
            };
            let method = method.split('/').next().unwrap_or("").to_lowercase();
            let properties = words
                .filter_map(|w| {
                    let (name, value) = w.split_once('=')?;
                    Some((name.to_lowercase(), value.trim_matches('"').to_owned()))
                })
                .collect();
            results.push((method, result.to_lowercase(), properties));
        }
        Some(Self {
            authserv_id,
            results,
        })
    }

    /// Whether a `dmarc=pass` result names `domain` as `header.from`.
    fn dmarc_pass(&self, domain: &str) -> bool {
        !domain.is_empty()
            && self.results.iter().any(|(method, result, properties)| {
                method == "dmarc"
                    && result == "pass"
                    && properties.iter().any(|(name, value)| {
                        name == "header.from"
                            && value
                                .rsplit('@')
                                .next()
                                .is_some_and(|d| d.eq_ignore_ascii_case(domain))
                    })
            })
    }
}

/// `text` without its comments (parenthesised, nested, `\` escapes), outside quoted strings.
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut depth, mut quoted, mut escaped) = (0usize, false, false);
    for c in text.chars() {
        if escaped {
            escaped = false;
            if depth == 0 {
                out.push(c);
            }
            continue;
        }
        match c {
            '\\' => {
                escaped = true;
                if depth == 0 {
                    out.push(c);
                }
            }
            '"' if depth == 0 => {
                quoted = !quoted;
                out.push(c);
            }
            '(' if !quoted => depth += 1,
            ')' if !quoted && depth > 0 => {
                depth -= 1;
                out.push(' ');
            }
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// The words of `statement`, with white space around `=` removed (`dmarc = pass` is
/// `dmarc=pass`).
fn tight_equals(statement: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut glue = false;
    for word in statement.split_whitespace() {
        let starts = word.starts_with('=');
        match words.last_mut() {
            Some(last) if glue || starts => last.push_str(word),
            _ => words.push(word.to_owned()),
        }
        glue = word.ends_with('=');
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(from: &str, received: bool, auth: &[&str]) -> Origin {
        Origin {
            from: vec![from.to_owned()],
            received,
            auth_results: auth.iter().map(|a| (*a).to_owned()).collect(),
        }
    }

    fn auto(trusted: &[&str]) -> Directions {
        let trusted: Vec<String> = trusted.iter().map(|t| (*t).to_owned()).collect();
        Directions::new(
            HashSet::from(["support@acme.test".to_owned()]),
            &trusted,
            None,
        )
    }

    #[test]
    fn authentication_results_are_read_with_comments_and_spaces() {
        let results = AuthResults::parse(
            " MX.Acme.Test 1 (the (nested) edge); spf=pass smtp.mailfrom=acme.test;\t dmarc = pass (p=reject) header.from = \"ACME.test\"",
        )
        .unwrap();
        assert_eq!(results.authserv_id, "mx.acme.test");
        assert!(results.dmarc_pass("acme.test"));
        assert!(!results.dmarc_pass("evil.test"));
        let none = AuthResults::parse(" mx.acme.test; none").unwrap();
        assert!(!none.dmarc_pass("acme.test"));
        assert!(AuthResults::parse("  ").is_none());
    }

    #[test]
    fn the_topmost_trusted_header_decides() {
        let d = auto(&["mx.acme.test"]);
        let passed = "mx.acme.test; dmarc=pass header.from=acme.test";
        let failed = "mx.acme.test; dmarc=fail header.from=acme.test";
        let untrusted = "mx.evil.test; dmarc=pass header.from=acme.test";
        let o = |auth: &[&str]| {
            d.decide(&origin("support@acme.test", true, auth), "")
                .unwrap()
                .0
        };
        assert_eq!(o(&[untrusted, passed]), Direction::Outbound);
        assert_eq!(o(&[failed, passed]), Direction::Inbound);
        assert_eq!(o(&[untrusted]), Direction::Inbound);
        assert_eq!(
            d.decide(&origin("support@acme.test", false, &[]), "")
                .unwrap()
                .0,
            Direction::Outbound
        );
        assert_eq!(
            d.decide(&origin("alice@example.com", true, &[]), "")
                .unwrap(),
            (Direction::Inbound, None)
        );
    }
}
