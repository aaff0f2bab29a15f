//! The `[agent]` and `[outbox]` tables of a persona, read for
//! [`persona`](crate::persona): whether and how its replies are sent, which mail the agent
//! answers and how often, and the SMTP server the replies leave through; and the readers
//! of values other tables share (durations, URLs, names of environment variables).
//!
//! Nothing is read outside the file: `password_env` names an environment variable that is
//! not looked up (unless the loader is asked to, see [`env`](crate::env)), `ca_file` is a
//! path that is not opened.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::time::Duration;

use protege_core::{
    AfterPerson, Approval, PersonaAgent, PersonaOutbox, ReplyMode, SmtpServer, TlsMode,
    Unauthenticated,
};
use protege_schema::{
    AFTER_PERSON, AGENT, APPROVALS, DURATION_MAX_DAYS, DurationError, FROM_NAME_MAX_CHARS, OUTBOX,
    REPLY_MODES, TLS_MODES, UNAUTHENTICATED, is_identifier, key_names, parse_duration,
};
use toml::de::{DeTable, DeValue};

use crate::diagnostic::suggestion;
use crate::reader::{self, Quoted, Sink, Value, get, misspelt, type_name, unknown_keys};
use crate::tools::ToolNames;

/// The `[agent]` table; `None` when it is not a table. `tools` checks the names of
/// `reply_tools`.
pub(crate) fn agent(
    sink: &mut Sink<'_>,
    value: &Value<'_>,
    tools: &ToolNames,
) -> Option<PersonaAgent> {
    let t = reader::table(sink, value, "`agent`")?;
    unknown_keys(sink, t, &key_names(AGENT), " in `[agent]`");
    let mut agent = PersonaAgent::default();
    reply_settings(sink, t, &mut agent);
    answer_settings(sink, t, &mut agent);
    limit_settings(sink, t, &mut agent);
    if let Some(v) = get(t, "reply_tools") {
        agent.reply_tools = tools.check(sink, v, "reply_tools");
    }
    Some(agent)
}

/// How the replies of `[agent]` `t` go, read into `agent`: `reply`, `approval` and
/// `unauthenticated`.
fn reply_settings(sink: &mut Sink<'_>, t: &DeTable<'_>, agent: &mut PersonaAgent) {
    if let Some(v) = get(t, "reply")
        && let Some(reply) = one_of(sink, v, "reply", &REPLY_MODES, ReplyMode::parse)
    {
        agent.reply = reply;
    }
    if let Some(v) = get(t, "approval")
        && let Some(approval) = one_of(sink, v, "approval", &APPROVALS, Approval::parse)
    {
        agent.approval = approval;
    }
    if let Some(v) = get(t, "unauthenticated")
        && let Some(unauthenticated) = one_of(
            sink,
            v,
            "unauthenticated",
            &UNAUTHENTICATED,
            Unauthenticated::parse,
        )
    {
        agent.unauthenticated = unauthenticated;
    }
}

/// Which mail `[agent]` `t` answers and how, read into `agent`: `reply_all`, `max_cc`,
/// `html`, `answer_automated`, `answer_cc`, `after_person` and `max_age`.
fn answer_settings(sink: &mut Sink<'_>, t: &DeTable<'_>, agent: &mut PersonaAgent) {
    if let Some(v) = get(t, "reply_all")
        && let Some(reply_all) = reader::boolean(sink, v, "`reply_all`")
    {
        agent.reply_all = reply_all;
    }
    if let Some(v) = get(t, "max_cc")
        && let Some(max_cc) = reader::positive(sink, v, "`max_cc`")
    {
        agent.max_cc = usize::try_from(max_cc).unwrap_or(usize::MAX);
    }
    if let Some(v) = get(t, "html")
        && let Some(html) = reader::boolean(sink, v, "`html`")
    {
        agent.html = html;
    }
    if let Some(v) = get(t, "answer_automated")
        && let Some(answer) = reader::boolean(sink, v, "`answer_automated`")
    {
        agent.answer_automated = answer;
    }
    if let Some(v) = get(t, "answer_cc")
        && let Some(answer) = reader::boolean(sink, v, "`answer_cc`")
    {
        agent.answer_cc = answer;
    }
    if let Some(v) = get(t, "after_person")
        && let Some(after) = one_of(sink, v, "after_person", &AFTER_PERSON, AfterPerson::parse)
    {
        agent.after_person = after;
    }
    if let Some(v) = get(t, "max_age")
        && let Some(d) = duration(sink, v, "max_age")
    {
        agent.max_age = d;
    }
}

/// The limits on the agent's work of `[agent]` `t`, read into `agent`: the reply counts,
/// attempts and catch-up, `tokens_per_day`, `give_up_after` and `pause`.
fn limit_settings(sink: &mut Sink<'_>, t: &DeTable<'_>, agent: &mut PersonaAgent) {
    for (key, field) in [
        (
            "max_replies_per_thread_per_day",
            &mut agent.max_replies_per_thread_per_day,
        ),
        (
            "max_replies_per_correspondent_per_day",
            &mut agent.max_replies_per_correspondent_per_day,
        ),
        ("max_replies_per_day", &mut agent.max_replies_per_day),
        ("provider_attempts", &mut agent.provider_attempts),
        ("max_attempts", &mut agent.max_attempts),
        ("max_catch_up", &mut agent.max_catch_up),
    ] {
        if let Some(v) = get(t, key)
            && let Some(n) = reader::positive(sink, v, Quoted(key))
        {
            *field = u32::try_from(n).unwrap_or(u32::MAX);
        }
    }
    if let Some(v) = get(t, "tokens_per_day") {
        agent.tokens_per_day = reader::positive(sink, v, "`tokens_per_day`");
    }
    if let Some(v) = get(t, "give_up_after")
        && let Some(d) = duration(sink, v, "give_up_after")
    {
        agent.give_up_after = d;
    }
    if let Some(v) = get(t, "pause")
        && let Some(d) = duration(sink, v, "pause")
    {
        agent.pause = d;
    }
}

/// The `[outbox]` table; the defaults when it is not a table.
pub(crate) fn outbox(sink: &mut Sink<'_>, value: &Value<'_>) -> PersonaOutbox {
    let mut outbox = PersonaOutbox::default();
    let Some(t) = reader::table(sink, value, "`outbox`") else {
        return outbox;
    };
    unknown_keys(sink, t, &key_names(OUTBOX), " in `[outbox]`");
    let smtp = get(t, "smtp");
    outbox.smtp = smtp.and_then(|v| smtp_server(sink, v));
    if let Some(v) = get(t, "tls")
        && one_of(sink, v, "tls", &TLS_MODES, |s| (s == "none").then_some(())).is_some()
    {
        match (smtp, &mut outbox.smtp) {
            // An invalid URL is reported already.
            (Some(_), None) => {}
            (None, _) => sink.error(
                v.span(),
                "`tls = \"none\"` applies to the server of `smtp`, and `[outbox]` names none",
            ),
            (Some(_), Some(server)) if server.security == TlsMode::Implicit => sink.error(
                v.span(),
                "`tls = \"none\"` contradicts `smtps://`, which is TLS from the first byte: use `smtp://` for a plain-text loopback server",
            ),
            (Some(_), Some(server)) if !is_loopback(&server.host) => sink.error(
                v.span(),
                format!(
                    "`tls = \"none\"` is accepted only for a loopback host (`localhost`, `127.0.0.0/8`, `[::1]`), and `{}` is not one: the login and the mail would cross the network in plain text",
                    server.host
                ),
            ),
            (Some(_), Some(server)) => server.security = TlsMode::None,
        }
    }
    if let Some(v) = get(t, "user") {
        outbox.user = non_blank(sink, v, "user");
    }
    if let Some(v) = get(t, "password_env") {
        outbox.password_env = env_name(sink, v, "password_env");
    }
    // A login needs its password and the reverse; a near miss of the other key is
    // reported as unknown already.
    for (key, value, other) in [
        ("user", outbox.user.is_some(), "password_env"),
        ("password_env", outbox.password_env.is_some(), "user"),
    ] {
        if value
            && get(t, other).is_none()
            && !misspelt(t, other)
            && let Some(v) = get(t, key)
        {
            let what = if other == "user" {
                "the SMTP login"
            } else {
                "the environment variable holding the SMTP password"
            };
            sink.error(v.span(), format!("`{key}` needs `{other}`, {what}"));
        }
    }
    if let Some(v) = get(t, "give_up_after")
        && let Some(d) = duration(sink, v, "give_up_after")
    {
        outbox.give_up_after = d;
    }
    if let Some(v) = get(t, "attempt_timeout")
        && let Some(d) = duration(sink, v, "attempt_timeout")
    {
        outbox.attempt_timeout = d;
    }
    if let Some(v) = get(t, "ca_file") {
        outbox.ca_file = non_blank(sink, v, "ca_file").map(PathBuf::from);
    }
    if let Some(v) = get(t, "from_name") {
        outbox.from_name = one_line(sink, v, "from_name", FROM_NAME_MAX_CHARS);
    }
    outbox
}

/// The name of an environment variable under `key`, or an error that does not repeat the
/// value (it may be the secret itself).
pub(crate) fn env_name(sink: &mut Sink<'_>, value: &Value<'_>, key: &str) -> Option<String> {
    let name = reader::text(sink, value, Quoted(key))?;
    if is_identifier(name) {
        Some(name.to_owned())
    } else {
        sink.error(
            value.span(),
            format!(
                "`{key}` must be the name of an environment variable (ASCII letters, digits and `_`, not starting with a digit), not its value"
            ),
        );
        None
    }
}

/// One of `names` (what `parse` reads), or an error naming them or the near miss.
pub(crate) fn one_of<T>(
    sink: &mut Sink<'_>,
    value: &Value<'_>,
    key: &str,
    names: &[&str],
    parse: impl Fn(&str) -> Option<T>,
) -> Option<T> {
    let text = reader::text(sink, value, Quoted(key))?;
    let parsed = parse(text);
    if parsed.is_none() {
        let hint = suggestion(text, names.iter().copied());
        let message = if hint.is_empty() {
            format!(
                "unknown `{key}` value `{text}`, expected {}",
                alternatives(names)
            )
        } else {
            format!("unknown `{key}` value `{text}`{hint}")
        };
        sink.error(value.span(), message);
    }
    parsed
}

/// `` `a` ``, `` `a` or `b` ``, `` `a`, `b` or `c` ``.
fn alternatives(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// A string that is not blank, or an error.
pub(crate) fn non_blank(sink: &mut Sink<'_>, value: &Value<'_>, key: &str) -> Option<String> {
    let text = reader::text(sink, value, Quoted(key))?;
    if text.trim().is_empty() {
        sink.error(value.span(), format!("`{key}` must not be empty"));
        return None;
    }
    Some(text.to_owned())
}

/// The text under `key` (`from_name`, a responsibility's `subject`): one line of at most
/// `max` characters, not blank.
pub(crate) fn one_line(
    sink: &mut Sink<'_>,
    value: &Value<'_>,
    key: &str,
    max: usize,
) -> Option<String> {
    let text = non_blank(sink, value, key)?;
    if text.contains(char::is_control) {
        sink.error(
            value.span(),
            format!("`{key}` must be one line: no control characters (line breaks, tabs, NUL …)"),
        );
        return None;
    }
    let chars = text.chars().count();
    if chars > max {
        sink.error(
            value.span(),
            format!("`{key}` must be at most {max} characters, found {chars}"),
        );
        return None;
    }
    Some(text)
}

/// A duration such as `"90s"`, `"11m"`, `"48h"` or `"2d"`, at most [`DURATION_MAX_DAYS`]
/// days, or an error naming the accepted form.
pub(crate) fn duration(sink: &mut Sink<'_>, value: &Value<'_>, key: &str) -> Option<Duration> {
    let found = match value.get_ref() {
        DeValue::String(text) => match parse_duration(text) {
            Ok(d) => return Some(d),
            Err(DurationError::TooLong) => {
                sink.error(
                    value.span(),
                    format!("`{key}` must be at most {DURATION_MAX_DAYS} days, found `{text}`"),
                );
                return None;
            }
            Err(DurationError::Malformed) => format!("`{text}`"),
        },
        other => type_name(other).to_owned(),
    };
    sink.error(
        value.span(),
        format!(
            "`{key}` must be a duration: a positive integer and a unit `s`, `m`, `h` or `d`, such as `\"90s\"` or `\"2d\"`; found {found}"
        ),
    );
    None
}

/// `smtp`: the scheme says how the connection is secured, the port defaults by it.
fn smtp_server(sink: &mut Sink<'_>, value: &Value<'_>) -> Option<SmtpServer> {
    let url = reader::text(sink, value, "`smtp`")?;
    match parse_smtp_url(url) {
        Ok(server) => Some(server),
        Err(reason) => {
            // The URL is not repeated: it may hold a password.
            sink.error(value.span(), format!("invalid `smtp` URL: {reason}"));
            None
        }
    }
}

fn parse_smtp_url(url: &str) -> Result<SmtpServer, String> {
    let (security, default_port, rest) = if let Some(rest) = url.strip_prefix("smtp://") {
        (TlsMode::StartTls, 587, rest)
    } else if let Some(rest) = url.strip_prefix("smtps://") {
        (TlsMode::Implicit, 465, rest)
    } else {
        return Err("expected `smtp://host[:port]` (STARTTLS) or `smtps://host[:port]` (TLS from the first byte)".to_owned());
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, after) = rest.split_at(end);
    if authority.contains('@') {
        return Err("the login goes in `user` and `password_env`, not in the URL".to_owned());
    }
    if !after.is_empty() {
        return Err("nothing may follow the host and port (no path, query or fragment)".to_owned());
    }
    let (host, port) = host_and_port(authority, "smtp://[::1]:25", default_port)?;
    Ok(SmtpServer {
        host: host.to_owned(),
        port,
        security,
    })
}

/// An `http://` or `https://` URL, as far as a persona file checks it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct HttpUrl {
    /// Whether the scheme is `https`.
    pub(crate) https: bool,
    /// The host, an IPv6 address without its brackets.
    pub(crate) host: String,
}

/// The URL under `key` (named `what` in messages, such as `http.url`), or an error; the
/// URL is not repeated, it may hold a secret. `secret_key` is where a login belongs.
pub(crate) fn http_url(
    sink: &mut Sink<'_>,
    value: &Value<'_>,
    what: &str,
    secret_key: &str,
) -> Option<(String, HttpUrl)> {
    let url = reader::text(sink, value, Quoted(what))?;
    match parse_http_url(url, secret_key) {
        Ok(parsed) => Some((url.to_owned(), parsed)),
        Err(reason) => {
            sink.error(value.span(), format!("invalid `{what}`: {reason}"));
            None
        }
    }
}

fn parse_http_url(url: &str, secret_key: &str) -> Result<HttpUrl, String> {
    let (https, default_port, rest) = if let Some(rest) = url.strip_prefix("https://") {
        (true, 443, rest)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (false, 80, rest)
    } else {
        return Err(
            "expected `https://host[:port][/path]` or `http://host[:port][/path]`".to_owned(),
        );
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, after) = rest.split_at(end);
    if authority.contains('@') {
        return Err(format!(
            "a login or secret goes in `{secret_key}`, not in the URL"
        ));
    }
    if after.contains('#') {
        return Err("a URL here has no fragment (`#…`)".to_owned());
    }
    if after.contains(|c: char| c.is_whitespace() || c.is_control()) {
        return Err("a URL has no spaces or control characters: encode them".to_owned());
    }
    let example = if https {
        "https://[::1]:8443"
    } else {
        "http://[::1]:8080"
    };
    let (host, _) = host_and_port(authority, example, default_port)?;
    Ok(HttpUrl {
        https,
        host: host.to_owned(),
    })
}

/// The host (an IPv6 address without its brackets) and the port of the `authority` of a
/// URL; `example` shows an IPv6 host in brackets.
pub(crate) fn host_and_port<'a>(
    authority: &'a str,
    example: &str,
    default_port: u16,
) -> Result<(&'a str, u16), String> {
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let Some((address, tail)) = bracketed.split_once(']') else {
            return Err("`[` opens an IPv6 address that no `]` closes".to_owned());
        };
        if address.parse::<Ipv6Addr>().is_err() {
            return Err(format!("`{address}` is not an IPv6 address"));
        }
        let port = match tail {
            "" => None,
            _ => match tail.strip_prefix(':') {
                Some(port) => Some(port),
                None => return Err("only `:port` may follow the `]` of an IPv6 address".to_owned()),
            },
        };
        (address, port)
    } else {
        let (host, port) = match authority.split_once(':') {
            Some((_, port)) if port.contains(':') => {
                return Err(format!(
                    "an IPv6 address goes in brackets, as in `{example}`"
                ));
            }
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        };
        if host.is_empty() {
            return Err("the host is missing".to_owned());
        }
        if !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        {
            return Err(format!(
                "`{host}` is not a host name (ASCII letters, digits, `-` and `.`) or an IP address"
            ));
        }
        (host, port)
    };
    let port = match port {
        None => default_port,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => {
                return Err(format!(
                    "the port must be a number from 1 to 65535, found `{p}`"
                ));
            }
        },
    };
    Ok((host, port))
}

/// Whether `host` (as [`SmtpServer::host`] holds it, an IPv6 address without brackets) is
/// this machine: `localhost`, an address of `127.0.0.0/8` or `::1`.
pub(crate) fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<Ipv4Addr>().is_ok_and(|a| a.is_loopback())
        || host.parse::<Ipv6Addr>().is_ok_and(|a| a.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smtp_urls() {
        let server = |host: &str, port, security| SmtpServer {
            host: host.to_owned(),
            port,
            security,
        };
        assert_eq!(
            parse_smtp_url("smtp://mail.acme.test"),
            Ok(server("mail.acme.test", 587, TlsMode::StartTls))
        );
        assert_eq!(
            parse_smtp_url("smtps://mail.acme.test:2465"),
            Ok(server("mail.acme.test", 2465, TlsMode::Implicit))
        );
        assert_eq!(
            parse_smtp_url("smtps://[2001:db8::1]"),
            Ok(server("2001:db8::1", 465, TlsMode::Implicit))
        );
        assert_eq!(
            parse_smtp_url("smtp://[::1]:2525"),
            Ok(server("::1", 2525, TlsMode::StartTls))
        );
        for bad in [
            "mail.acme.test",
            "SMTP://mail.acme.test",
            "smtp://",
            "smtp://:25",
            "smtp://mail.acme.test/",
            "smtp://a@mail.acme.test",
            "smtp://mail.acme.test:0",
            "smtp://mail.acme.test:+25",
            "smtp://mail.acme.test:65536",
            "smtp://mail acme",
            "smtp://::1",
            "smtp://[::1",
            "smtp://[::1]x",
            "smtp://[mail]",
        ] {
            assert!(parse_smtp_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn loopback_hosts() {
        for host in ["localhost", "LocalHost", "127.0.0.1", "127.8.9.10", "::1"] {
            assert!(is_loopback(host), "{host}");
        }
        for host in [
            "mail.acme.test",
            "128.0.0.1",
            "::2",
            "localhost.acme.test",
            "0.0.0.0",
        ] {
            assert!(!is_loopback(host), "{host}");
        }
    }
}
