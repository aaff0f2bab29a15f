//! The `[inbox]` table of a persona, read for [`persona`](crate::persona): the IMAP mailbox
//! the agent fetches its mail from (§19). Nothing is read outside the file: `password_env`
//! names an environment variable that is not looked up here, `ca_file` is not opened.

use std::path::PathBuf;

use protege_core::{DEFAULT_INBOX_POLL, InboxAfter, PersonaInbox, TlsMode};
use protege_schema::{INBOX, TLS_MODES, key_names};
use toml::de::DeTable;

use crate::agent::{duration, env_name, host_and_port, is_loopback, non_blank, one_of};
use crate::reader::{self, Quoted, Sink, Value, get, unknown_keys};

/// The `[inbox]` table; `None` when it is not a table or a required key is missing or
/// invalid (each reported at its place).
pub(crate) fn inbox(sink: &mut Sink<'_>, value: &Value<'_>) -> Option<PersonaInbox> {
    let t = reader::table(sink, value, "`inbox`")?;
    unknown_keys(sink, t, &key_names(INBOX), " in `[inbox]`");
    let mut missing = false;
    let mut required = |sink: &mut Sink<'_>, key: &str| {
        let found = get(t, key);
        if found.is_none() && !reader::misspelt(t, key) {
            sink.error(value.span(), format!("`[inbox]` needs `{key}`"));
        }
        missing |= found.is_none();
        found
    };
    let imap = required(sink, "imap");
    let user = required(sink, "user");
    let password_env = required(sink, "password_env");
    let server = imap.and_then(|v| {
        let url = reader::text(sink, v, "`imap`")?;
        match parse_imap_url(url) {
            Ok(server) => Some(server),
            Err(reason) => {
                // The URL is not repeated: it may hold a password.
                sink.error(v.span(), format!("invalid `imap` URL: {reason}"));
                None
            }
        }
    });
    let user = user.and_then(|v| non_blank(sink, v, "user"));
    let password_env = password_env.and_then(|v| env_name(sink, v, "password_env"));
    let security = connection_security(sink, t, server.as_ref());
    let after = match get(t, "after") {
        Some(v) => after(sink, v)?,
        None => InboxAfter::Seen,
    };
    let since = get(t, "since").and_then(|v| since_day(sink, v));
    let poll = get(t, "poll")
        .and_then(|v| duration(sink, v, "poll"))
        .unwrap_or(DEFAULT_INBOX_POLL);
    let sent = get(t, "sent").and_then(|v| {
        let text = reader::text(sink, v, Quoted("sent"))?;
        folder(sink, v, "sent", text)
    });
    let ca_file = get(t, "ca_file")
        .and_then(|v| non_blank(sink, v, "ca_file"))
        .map(PathBuf::from);
    let server = server?;
    if let (Some(sent), Some(v)) = (&sent, get(t, "sent"))
        && sent == &server.folder
    {
        sink.error(
            v.span(),
            format!("`sent` names `{sent}`, the folder `imap` reads: the sent mail needs a folder of its own"),
        );
    }
    if missing {
        return None;
    }
    Some(PersonaInbox {
        host: server.host,
        port: server.port,
        security: security?,
        folder: server.folder,
        user: user?,
        password_env: password_env?,
        after,
        since,
        poll,
        sent,
        ca_file,
    })
}

/// The security of the connection to the `imap` `server` of `[inbox]` `t`: the URL's, or
/// none with `tls = "none"`, which only a loopback `imap://` server may have.
fn connection_security(
    sink: &mut Sink<'_>,
    t: &DeTable<'_>,
    server: Option<&ImapUrl>,
) -> Option<TlsMode> {
    let mut security = server.map(|s| s.security);
    if let Some(v) = get(t, "tls")
        && one_of(sink, v, "tls", &TLS_MODES, |s| (s == "none").then_some(())).is_some()
        && let Some(server) = server
    {
        if server.security == TlsMode::Implicit {
            sink.error(
                v.span(),
                "`tls = \"none\"` contradicts `imaps://`, which is TLS from the first byte: use `imap://` for a plain-text loopback server",
            );
        } else if !is_loopback(&server.host) {
            sink.error(
                v.span(),
                format!(
                    "`tls = \"none\"` is accepted only for a loopback host (`localhost`, `127.0.0.0/8`, `[::1]`), and `{}` is not one: the password and the mail would cross the network in plain text",
                    server.host
                ),
            );
        } else {
            security = Some(TlsMode::None);
        }
    }
    security
}

/// `since`: a day written `YYYY-MM-DD`.
fn since_day(sink: &mut Sink<'_>, value: &Value<'_>) -> Option<chrono::NaiveDate> {
    let text = reader::text(sink, value, Quoted("since"))?;
    let day = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .filter(|_| text.len() == 10);
    if day.is_none() {
        sink.error(
            value.span(),
            format!("`since` must be a day written `YYYY-MM-DD`, such as `\"2026-01-31\"`; found `{text}`"),
        );
    }
    day
}

/// `after`: `seen`, or `move:FOLDER`.
fn after(sink: &mut Sink<'_>, value: &Value<'_>) -> Option<InboxAfter> {
    let text = reader::text(sink, value, Quoted("after"))?;
    if text == "seen" {
        return Some(InboxAfter::Seen);
    }
    if let Some(name) = text.strip_prefix("move:") {
        return folder(sink, value, "after", name).map(InboxAfter::Move);
    }
    sink.error(
        value.span(),
        format!("unknown `after` value `{text}`, expected `seen` or `move:FOLDER`"),
    );
    None
}

/// A folder's name under `key`, or an error saying what a name may hold.
fn folder(sink: &mut Sink<'_>, value: &Value<'_>, key: &str, name: &str) -> Option<String> {
    match folder_problem(name) {
        None => Some(name.to_owned()),
        Some(why) => {
            sink.error(value.span(), format!("invalid folder in `{key}`: {why}"));
            None
        }
    }
}

/// Why `name` cannot be a folder here, if it cannot.
fn folder_problem(name: &str) -> Option<&'static str> {
    if name.trim().is_empty() {
        Some("the name is empty")
    } else if name.starts_with(' ') || name.ends_with(' ') {
        Some("the name starts or ends with a space")
    } else if !name.bytes().all(|b| (b' '..=b'~').contains(&b)) {
        Some(
            "a name is printable ASCII (write other characters in IMAP's modified UTF-7, as the server lists them)",
        )
    } else if name.contains(['"', '\\']) {
        Some("a name holds no `\"` or `\\`")
    } else {
        None
    }
}

/// The parts of an `imap` URL.
struct ImapUrl {
    host: String,
    port: u16,
    security: TlsMode,
    folder: String,
}

fn parse_imap_url(url: &str) -> Result<ImapUrl, String> {
    let (security, default_port, rest) = if let Some(rest) = url.strip_prefix("imap://") {
        (TlsMode::StartTls, 143, rest)
    } else if let Some(rest) = url.strip_prefix("imaps://") {
        (TlsMode::Implicit, 993, rest)
    } else {
        return Err("expected `imaps://host[:port][/FOLDER]` (TLS from the first byte) or `imap://host[:port][/FOLDER]` (STARTTLS)".to_owned());
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, after) = rest.split_at(end);
    if authority.contains('@') {
        return Err("the login goes in `user` and `password_env`, not in the URL".to_owned());
    }
    if after.starts_with(['?', '#']) {
        return Err("only a folder may follow the host and port (no query or fragment)".to_owned());
    }
    let folder = match after.strip_prefix('/') {
        None | Some("") => "INBOX".to_owned(),
        Some(name) => {
            if let Some(why) = folder_problem(name) {
                return Err(format!("the folder: {why}"));
            }
            name.to_owned()
        }
    };
    let (host, port) = host_and_port(authority, "imaps://[::1]:993", default_port)?;
    Ok(ImapUrl {
        host: host.to_owned(),
        port,
        security,
        folder,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = parse_imap_url("imaps://imap.acme.test").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.security, u.folder.as_str()),
            ("imap.acme.test", 993, TlsMode::Implicit, "INBOX")
        );
        let u = parse_imap_url("imap://[::1]:1143/Support/New").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.security, u.folder.as_str()),
            ("::1", 1143, TlsMode::StartTls, "Support/New")
        );
        assert_eq!(
            parse_imap_url("imaps://kim:secret@imap.acme.test")
                .err()
                .unwrap(),
            "the login goes in `user` and `password_env`, not in the URL"
        );
        assert_eq!(
            parse_imap_url("imaps://imap.acme.test/Caf\u{e9}")
                .err()
                .unwrap(),
            "the folder: a name is printable ASCII (write other characters in IMAP's modified UTF-7, as the server lists them)"
        );
        assert_eq!(
            parse_imap_url("pop3://x").err().unwrap(),
            "expected `imaps://host[:port][/FOLDER]` (TLS from the first byte) or `imap://host[:port][/FOLDER]` (STARTTLS)"
        );
    }
}
