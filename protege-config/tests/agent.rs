//! The `[agent]` and `[outbox]` tables of a persona file: every key read with its value
//! and its default, and each mistake with its diagnostic at the place of the offending
//! value.

use std::path::{Path, PathBuf};
use std::time::Duration;

use protege_config::{Persona, Registry};
use protege_core::{
    AfterPerson, Approval, DEFAULT_ATTEMPT_TIMEOUT, DEFAULT_GIVE_UP_AFTER, DEFAULT_MAX_CC,
    PersonaAgent, PersonaOutbox, ReplyMode, SmtpServer, TlsMode, Unauthenticated,
};
use protege_schema::{AGENT, APPROVALS, Default, Key, OUTBOX, REPLY_MODES, UNAUTHENTICATED};

/// A reply chain, so that the rest of each file is valid.
const CHAIN: &str = "\n[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"Hello.\"\n";

fn parse(source: &str) -> Result<Persona, protege_config::Diagnostics> {
    Persona::parse(
        Path::new("p.toml"),
        &format!("{source}\n{CHAIN}"),
        &Registry::new(),
    )
}

/// The persona of `source`, which must load.
fn load(source: &str) -> Persona {
    match parse(source) {
        Ok(p) => p,
        Err(d) => panic!("{source}\n{d}"),
    }
}

fn agent(source: &str) -> Option<PersonaAgent> {
    load(source).info.agent.clone()
}

fn outbox(source: &str) -> PersonaOutbox {
    load(source).info.outbox.clone()
}

/// The headlines of the problems of `source`, which must not load.
fn errors(source: &str) -> Vec<String> {
    match parse(source) {
        Ok(_) => panic!("loaded: {source}"),
        Err(d) => d.iter().map(|d| d.headline()).collect(),
    }
}

/// The one problem of `source`.
fn error(source: &str) -> String {
    let mut errors = errors(source);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    errors.remove(0)
}

fn server(host: &str, port: u16, security: TlsMode) -> Option<SmtpServer> {
    Some(SmtpServer {
        host: host.to_owned(),
        port,
        security,
    })
}

// --- what is read ------------------------------------------------------------------------

#[test]
fn without_the_tables_there_is_no_agent_and_the_default_outbox() {
    let p = load("name = \"p\"");
    assert_eq!(p.info.agent, None);
    assert_eq!(p.info.outbox, PersonaOutbox::default());
    assert_eq!(
        PersonaOutbox::default(),
        PersonaOutbox {
            smtp: None,
            user: None,
            password_env: None,
            give_up_after: Duration::from_secs(2 * 86_400),
            attempt_timeout: Duration::from_secs(11 * 60),
            ca_file: None,
            from_name: None,
        }
    );
}

#[test]
fn an_empty_agent_table_is_there_with_the_defaults() {
    let expected = PersonaAgent {
        reply: ReplyMode::Send,
        approval: Approval::Never,
        unauthenticated: Unauthenticated::Draft,
        reply_all: false,
        max_cc: 10,
        html: false,
        answer_automated: false,
        answer_cc: true,
        after_person: AfterPerson::Skip,
        max_age: Duration::from_secs(7 * 86_400),
        max_replies_per_thread_per_day: 5,
        max_replies_per_correspondent_per_day: 10,
        max_replies_per_day: 1000,
        tokens_per_day: None,
        provider_attempts: 5,
        max_attempts: 3,
        give_up_after: Duration::from_secs(24 * 3600),
        pause: Duration::from_secs(600),
        reply_tools: None,
        max_catch_up: 24,
    };
    assert_eq!(agent("[agent]"), Some(expected.clone()));
    assert_eq!(PersonaAgent::default(), expected);
    assert_eq!(outbox("[outbox]"), PersonaOutbox::default());
}

#[test]
fn every_agent_key_is_read() {
    let source = "[agent]\nreply = \"draft\"\napproval = \"first_contact\"\nunauthenticated = \"skip\"\nreply_all = true\nmax_cc = 3\nhtml = true";
    assert_eq!(
        agent(source),
        Some(PersonaAgent {
            reply: ReplyMode::Draft,
            approval: Approval::FirstContact,
            unauthenticated: Unauthenticated::Skip,
            reply_all: true,
            max_cc: 3,
            html: true,
            ..PersonaAgent::default()
        })
    );
    // Each key alone leaves the others at their defaults.
    let one = |key: &str, value: &str| agent(&format!("[agent]\n{key} = {value}")).unwrap();
    assert_eq!(one("reply", "\"off\"").reply, ReplyMode::Off);
    assert_eq!(one("reply", "\"send\"").reply, ReplyMode::Send);
    assert_eq!(one("approval", "\"always\"").approval, Approval::Always);
    assert_eq!(one("approval", "\"never\"").approval, Approval::Never);
    assert_eq!(
        one("unauthenticated", "\"send\""),
        PersonaAgent {
            unauthenticated: Unauthenticated::Send,
            ..PersonaAgent::default()
        }
    );
    assert_eq!(
        one("unauthenticated", "\"draft\"").unauthenticated,
        Unauthenticated::Draft
    );
    assert_eq!(
        one("max_cc", "1_000"),
        PersonaAgent {
            max_cc: 1000,
            ..PersonaAgent::default()
        }
    );
}

#[test]
fn reply_draft_and_approval_always_load_together() {
    let a = agent("[agent]\nreply = \"draft\"\napproval = \"always\"").unwrap();
    assert_eq!((a.reply, a.approval), (ReplyMode::Draft, Approval::Always));
    assert!(a.always_drafts());
}

#[test]
fn every_outbox_key_is_read() {
    let source = "[outbox]\nsmtp = \"smtp://mail.acme.test:2525\"\nuser = \"support@acme.test\"\npassword_env = \"SMTP_PASSWORD\"\ngive_up_after = \"48h\"\nattempt_timeout = \"90s\"\nca_file = \"certs/ca.pem\"\nfrom_name = \"Acme Support\"";
    assert_eq!(
        outbox(source),
        PersonaOutbox {
            smtp: server("mail.acme.test", 2525, TlsMode::StartTls),
            user: Some("support@acme.test".into()),
            password_env: Some("SMTP_PASSWORD".into()),
            give_up_after: Duration::from_secs(48 * 3600),
            attempt_timeout: Duration::from_secs(90),
            ca_file: Some(PathBuf::from("certs/ca.pem")),
            from_name: Some("Acme Support".into()),
        }
    );
}

#[test]
fn the_smtp_url_says_the_security_and_the_default_port() {
    let smtp = |url: &str| outbox(&format!("[outbox]\nsmtp = \"{url}\"")).smtp;
    assert_eq!(
        smtp("smtp://mail.acme.test"),
        server("mail.acme.test", 587, TlsMode::StartTls)
    );
    assert_eq!(
        smtp("smtps://mail.acme.test"),
        server("mail.acme.test", 465, TlsMode::Implicit)
    );
    assert_eq!(
        smtp("smtps://203.0.113.7:4650"),
        server("203.0.113.7", 4650, TlsMode::Implicit)
    );
    assert_eq!(
        smtp("smtp://[2001:db8::25]"),
        server("2001:db8::25", 587, TlsMode::StartTls)
    );
    assert_eq!(
        smtp("smtp://[2001:db8::25]:25"),
        server("2001:db8::25", 25, TlsMode::StartTls)
    );
}

#[test]
fn tls_none_is_plain_text_to_a_loopback_host() {
    for (url, host, port) in [
        ("smtp://localhost:1025", "localhost", 1025),
        ("smtp://127.0.0.1", "127.0.0.1", 587),
        ("smtp://127.1.2.3:25", "127.1.2.3", 25),
        ("smtp://[::1]:2525", "::1", 2525),
    ] {
        assert_eq!(
            outbox(&format!("[outbox]\nsmtp = \"{url}\"\ntls = \"none\"")).smtp,
            server(host, port, TlsMode::None),
            "{url}"
        );
    }
}

#[test]
fn durations_take_four_units() {
    let give_up = |d: &str| outbox(&format!("[outbox]\ngive_up_after = \"{d}\"")).give_up_after;
    assert_eq!(give_up("90s"), Duration::from_secs(90));
    assert_eq!(give_up("11m"), Duration::from_secs(660));
    assert_eq!(give_up("48h"), Duration::from_secs(172_800));
    assert_eq!(give_up("2d"), Duration::from_secs(172_800));
    assert_eq!(give_up("365d"), Duration::from_secs(365 * 86_400));
    assert_eq!(give_up("8760h"), Duration::from_secs(365 * 86_400));
    let o = outbox("[outbox]\nattempt_timeout = \"5m\"");
    assert_eq!(
        o,
        PersonaOutbox {
            attempt_timeout: Duration::from_secs(300),
            ..PersonaOutbox::default()
        }
    );
}

#[test]
fn a_login_without_a_server_loads() {
    assert_eq!(
        outbox("[outbox]\nuser = \"support@acme.test\"\npassword_env = \"SMTP_PASSWORD\""),
        PersonaOutbox {
            user: Some("support@acme.test".into()),
            password_env: Some("SMTP_PASSWORD".into()),
            ..PersonaOutbox::default()
        }
    );
}

#[test]
fn from_name_may_be_200_characters() {
    let name = "é".repeat(200);
    assert_eq!(
        outbox(&format!("[outbox]\nfrom_name = \"{name}\"")).from_name,
        Some(name)
    );
}

// --- mistakes ----------------------------------------------------------------------------

#[test]
fn unknown_keys_are_reported_with_a_suggestion() {
    assert_eq!(
        error("[agent]\nreplyall = true"),
        "p.toml:2:1: error: unknown key `replyall` in `[agent]`, did you mean `reply_all`?"
    );
    assert_eq!(
        error("[agent]\nsignature = \"x\""),
        "p.toml:2:1: error: unknown key `signature` in `[agent]`"
    );
    assert_eq!(
        error("[outbox]\nsmpt = \"smtp://mail.acme.test\""),
        "p.toml:2:1: error: unknown key `smpt` in `[outbox]`, did you mean `smtp`?"
    );
    assert_eq!(
        error("[outbox]\npassword = \"hunter2\""),
        "p.toml:2:1: error: unknown key `password` in `[outbox]`, did you mean `password_env`?"
    );
    assert_eq!(
        error("[agnet]\nreply = \"send\""),
        "p.toml:1:2: error: unknown key `agnet`, did you mean `agent`?"
    );
}

#[test]
fn the_tables_must_be_tables() {
    assert_eq!(
        error("agent = \"send\""),
        "p.toml:1:9: error: `agent` must be a table, found a string"
    );
    assert_eq!(
        error("outbox = \"smtp://mail.acme.test\""),
        "p.toml:1:10: error: `outbox` must be a table, found a string"
    );
}

#[test]
fn agent_values_are_checked() {
    assert_eq!(
        error("[agent]\nreply = \"sned\""),
        "p.toml:2:9: error: unknown `reply` value `sned`, did you mean `send`?"
    );
    assert_eq!(
        error("[agent]\nreply = \"auto\""),
        "p.toml:2:9: error: unknown `reply` value `auto`, expected `send`, `draft` or `off`"
    );
    assert_eq!(
        error("[agent]\nreply = true"),
        "p.toml:2:9: error: `reply` must be a string, found a boolean"
    );
    assert_eq!(
        error("[agent]\napproval = \"first-contact\""),
        "p.toml:2:12: error: unknown `approval` value `first-contact`, did you mean `first_contact`?"
    );
    assert_eq!(
        error("[agent]\napproval = \"sometimes\""),
        "p.toml:2:12: error: unknown `approval` value `sometimes`, expected `never`, `always` or `first_contact`"
    );
    assert_eq!(
        error("[agent]\nunauthenticated = \"reject\""),
        "p.toml:2:19: error: unknown `unauthenticated` value `reject`, expected `draft`, `send` or `skip`"
    );
    assert_eq!(
        error("[agent]\nunauthenticated = \"skpi\""),
        "p.toml:2:19: error: unknown `unauthenticated` value `skpi`, did you mean `skip`?"
    );
    assert_eq!(
        error("[agent]\nreply_all = \"yes\""),
        "p.toml:2:13: error: `reply_all` must be a boolean, found a string"
    );
    assert_eq!(
        error("[agent]\nhtml = 1"),
        "p.toml:2:8: error: `html` must be a boolean, found an integer"
    );
    assert_eq!(
        error("[agent]\nmax_cc = 0"),
        "p.toml:2:10: error: `max_cc` must be a positive integer, found `0`"
    );
    assert_eq!(
        error("[agent]\nmax_cc = -3"),
        "p.toml:2:10: error: `max_cc` must be a positive integer, found `-3`"
    );
    assert_eq!(
        error("[agent]\nmax_cc = \"10\""),
        "p.toml:2:10: error: `max_cc` must be a positive integer, found a string"
    );
}

#[test]
fn smtp_urls_are_checked() {
    let smtp = |url: &str| error(&format!("[outbox]\nsmtp = \"{url}\""));
    let form = "p.toml:2:8: error: invalid `smtp` URL: expected `smtp://host[:port]` (STARTTLS) or `smtps://host[:port]` (TLS from the first byte)";
    for url in [
        "mail.acme.test",
        "https://mail.acme.test",
        "SMTP://mail.acme.test",
        " smtp://mail.acme.test",
    ] {
        assert_eq!(smtp(url), form, "{url}");
    }
    assert_eq!(
        smtp("smtp://support:hunter2@mail.acme.test"),
        "p.toml:2:8: error: invalid `smtp` URL: the login goes in `user` and `password_env`, not in the URL"
    );
    for url in [
        "smtp://mail.acme.test/",
        "smtp://mail.acme.test:587/submission",
        "smtp://mail.acme.test?auth=plain",
        "smtp://mail.acme.test#x",
    ] {
        assert_eq!(
            smtp(url),
            "p.toml:2:8: error: invalid `smtp` URL: nothing may follow the host and port (no path, query or fragment)",
            "{url}"
        );
    }
    assert_eq!(
        smtp("smtp://"),
        "p.toml:2:8: error: invalid `smtp` URL: the host is missing"
    );
    assert_eq!(
        smtp("smtps://:465"),
        "p.toml:2:8: error: invalid `smtp` URL: the host is missing"
    );
    assert_eq!(
        smtp("smtp://mail acme.test"),
        "p.toml:2:8: error: invalid `smtp` URL: `mail acme.test` is not a host name (ASCII letters, digits, `-` and `.`) or an IP address"
    );
    assert_eq!(
        smtp("smtp://mail.acme.test:0"),
        "p.toml:2:8: error: invalid `smtp` URL: the port must be a number from 1 to 65535, found `0`"
    );
    assert_eq!(
        smtp("smtp://mail.acme.test:65536"),
        "p.toml:2:8: error: invalid `smtp` URL: the port must be a number from 1 to 65535, found `65536`"
    );
    assert_eq!(
        smtp("smtp://mail.acme.test:"),
        "p.toml:2:8: error: invalid `smtp` URL: the port must be a number from 1 to 65535, found ``"
    );
    assert_eq!(
        smtp("smtp://mail.acme.test:+25"),
        "p.toml:2:8: error: invalid `smtp` URL: the port must be a number from 1 to 65535, found `+25`"
    );
    assert_eq!(
        smtp("smtp://2001:db8::25:587"),
        "p.toml:2:8: error: invalid `smtp` URL: an IPv6 address goes in brackets, as in `smtp://[::1]:25`"
    );
    assert_eq!(
        smtp("smtp://[2001:db8::25"),
        "p.toml:2:8: error: invalid `smtp` URL: `[` opens an IPv6 address that no `]` closes"
    );
    assert_eq!(
        smtp("smtp://[mail.acme.test]"),
        "p.toml:2:8: error: invalid `smtp` URL: `mail.acme.test` is not an IPv6 address"
    );
    assert_eq!(
        smtp("smtp://[::1]587"),
        "p.toml:2:8: error: invalid `smtp` URL: only `:port` may follow the `]` of an IPv6 address"
    );
    assert_eq!(
        error("[outbox]\nsmtp = 587"),
        "p.toml:2:8: error: `smtp` must be a string, found an integer"
    );
}

#[test]
fn tls_none_is_refused_where_it_would_cross_the_network() {
    assert_eq!(
        error("[outbox]\nsmtp = \"smtp://mail.acme.test\"\ntls = \"none\""),
        "p.toml:3:7: error: `tls = \"none\"` is accepted only for a loopback host (`localhost`, `127.0.0.0/8`, `[::1]`), and `mail.acme.test` is not one: the login and the mail would cross the network in plain text"
    );
    assert_eq!(
        error("[outbox]\nsmtp = \"smtp://[2001:db8::25]\"\ntls = \"none\""),
        "p.toml:3:7: error: `tls = \"none\"` is accepted only for a loopback host (`localhost`, `127.0.0.0/8`, `[::1]`), and `2001:db8::25` is not one: the login and the mail would cross the network in plain text"
    );
    assert_eq!(
        error("[outbox]\nsmtp = \"smtps://localhost\"\ntls = \"none\""),
        "p.toml:3:7: error: `tls = \"none\"` contradicts `smtps://`, which is TLS from the first byte: use `smtp://` for a plain-text loopback server"
    );
    assert_eq!(
        error("[outbox]\ntls = \"none\""),
        "p.toml:2:7: error: `tls = \"none\"` applies to the server of `smtp`, and `[outbox]` names none"
    );
    assert_eq!(
        error("[outbox]\nsmtp = \"smtp://localhost\"\ntls = \"off\""),
        "p.toml:3:7: error: unknown `tls` value `off`, expected `none`"
    );
    assert_eq!(
        error("[outbox]\nsmtp = \"smtp://localhost\"\ntls = \"nnoe\""),
        "p.toml:3:7: error: unknown `tls` value `nnoe`, did you mean `none`?"
    );
    assert_eq!(
        error("[outbox]\nsmtp = \"smtp://localhost\"\ntls = false"),
        "p.toml:3:7: error: `tls` must be a string, found a boolean"
    );
    // An invalid URL is one problem, not two.
    assert_eq!(
        error("[outbox]\nsmtp = \"smtp://localhost/\"\ntls = \"none\""),
        "p.toml:2:8: error: invalid `smtp` URL: nothing may follow the host and port (no path, query or fragment)"
    );
}

#[test]
fn the_login_and_its_password_come_together() {
    assert_eq!(
        error("[outbox]\nsmtp = \"smtp://mail.acme.test\"\nuser = \"support@acme.test\""),
        "p.toml:3:8: error: `user` needs `password_env`, the environment variable holding the SMTP password"
    );
    assert_eq!(
        error("[outbox]\nsmtp = \"smtp://mail.acme.test\"\npassword_env = \"SMTP_PASSWORD\""),
        "p.toml:3:16: error: `password_env` needs `user`, the SMTP login"
    );
    assert_eq!(
        error("[outbox]\npassword_env = \"SMTP_PASSWORD\""),
        "p.toml:2:16: error: `password_env` needs `user`, the SMTP login"
    );
    // A near miss of the other key is one problem, not two.
    assert_eq!(
        error("[outbox]\nuser = \"support@acme.test\"\npasword_env = \"SMTP_PASSWORD\""),
        "p.toml:3:1: error: unknown key `pasword_env` in `[outbox]`, did you mean `password_env`?"
    );
    assert_eq!(
        error("[outbox]\nuser = \"  \"\npassword_env = \"SMTP_PASSWORD\""),
        "p.toml:2:8: error: `user` must not be empty"
    );
    assert_eq!(
        error("[outbox]\nuser = 7\npassword_env = \"SMTP_PASSWORD\""),
        "p.toml:2:8: error: `user` must be a string, found an integer"
    );
}

#[test]
fn password_env_is_a_name_never_a_value() {
    for value in [
        "hunter2!",
        "2FA_SECRET",
        "SMTP-PASSWORD",
        "",
        "$SMTP_PASSWORD",
    ] {
        assert_eq!(
            error(&format!(
                "[outbox]\nuser = \"support@acme.test\"\npassword_env = \"{value}\""
            )),
            "p.toml:3:16: error: `password_env` must be the name of an environment variable (ASCII letters, digits and `_`, not starting with a digit), not its value",
            "{value}"
        );
    }
    assert_eq!(
        error("[outbox]\nuser = \"support@acme.test\"\npassword_env = [\"SMTP_PASSWORD\"]"),
        "p.toml:3:16: error: `password_env` must be a string, found an array"
    );
    assert!(
        outbox("[outbox]\nuser = \"u\"\npassword_env = \"_smtp_password_2\"")
            .password_env
            .is_some()
    );
}

#[test]
fn durations_are_checked() {
    let form = |col: usize, found: &str| {
        format!(
            "p.toml:2:{col}: error: `give_up_after` must be a duration: a positive integer and a unit `s`, `m`, `h` or `d`, such as `\"90s\"` or `\"2d\"`; found {found}"
        )
    };
    for value in [
        "2 days", "2", "0d", "00s", "2D", "1w", "1.5h", "-2d", "+2d", "2d ", "", "h",
    ] {
        assert_eq!(
            error(&format!("[outbox]\ngive_up_after = \"{value}\"")),
            form(17, &format!("`{value}`")),
            "{value}"
        );
    }
    assert_eq!(
        error("[outbox]\ngive_up_after = 3600"),
        form(17, "an integer")
    );
    assert_eq!(
        error("[outbox]\ngive_up_after = \"366d\""),
        "p.toml:2:17: error: `give_up_after` must be at most 365 days, found `366d`"
    );
    assert_eq!(
        error("[outbox]\ngive_up_after = \"99999999999999999999999s\""),
        "p.toml:2:17: error: `give_up_after` must be at most 365 days, found `99999999999999999999999s`"
    );
    assert_eq!(
        error("[outbox]\nattempt_timeout = \"10 minutes\""),
        "p.toml:2:19: error: `attempt_timeout` must be a duration: a positive integer and a unit `s`, `m`, `h` or `d`, such as `\"90s\"` or `\"2d\"`; found `10 minutes`"
    );
    assert_eq!(
        error("[outbox]\nattempt_timeout = \"8761h\""),
        "p.toml:2:19: error: `attempt_timeout` must be at most 365 days, found `8761h`"
    );
}

#[test]
fn ca_file_and_from_name_are_checked() {
    assert_eq!(
        error("[outbox]\nca_file = \"\""),
        "p.toml:2:11: error: `ca_file` must not be empty"
    );
    assert_eq!(
        error("[outbox]\nca_file = true"),
        "p.toml:2:11: error: `ca_file` must be a string, found a boolean"
    );
    for name in [
        "Acme\\r\\nBcc: all@acme.test",
        "Acme\\u0000",
        "Acme\\tSupport",
    ] {
        assert_eq!(
            error(&format!("[outbox]\nfrom_name = \"{name}\"")),
            "p.toml:2:13: error: `from_name` must be one line: no control characters (line breaks, tabs, NUL …)",
            "{name}"
        );
    }
    assert_eq!(
        error("[outbox]\nfrom_name = \"   \""),
        "p.toml:2:13: error: `from_name` must not be empty"
    );
    assert_eq!(
        error(&format!("[outbox]\nfrom_name = \"{}\"", "a".repeat(201))),
        "p.toml:2:13: error: `from_name` must be at most 200 characters, found 201"
    );
    assert_eq!(
        error("[outbox]\nfrom_name = 5"),
        "p.toml:2:13: error: `from_name` must be a string, found an integer"
    );
}

#[test]
fn every_problem_of_both_tables_is_reported_in_order() {
    let source = "[agent]\nreply = \"later\"\nmax_cc = 0\n\n[outbox]\nsmtp = \"smtp://mail.acme.test/x\"\ngive_up_after = \"forever\"\nfrom_name = \"\"";
    assert_eq!(
        errors(source),
        [
            "p.toml:2:9: error: unknown `reply` value `later`, expected `send`, `draft` or `off`",
            "p.toml:3:10: error: `max_cc` must be a positive integer, found `0`",
            "p.toml:6:8: error: invalid `smtp` URL: nothing may follow the host and port (no path, query or fragment)",
            "p.toml:7:17: error: `give_up_after` must be a duration: a positive integer and a unit `s`, `m`, `h` or `d`, such as `\"90s\"` or `\"2d\"`; found `forever`",
            "p.toml:8:13: error: `from_name` must not be empty",
        ]
    );
}

// --- the key tables ----------------------------------------------------------------------

fn key(keys: &[Key], name: &str) -> Key {
    *keys.iter().find(|k| k.name == name).unwrap()
}

#[test]
fn the_key_tables_say_what_the_reader_does() {
    assert_eq!(REPLY_MODES, ReplyMode::NAMES);
    assert_eq!(APPROVALS, Approval::NAMES);
    assert_eq!(UNAUTHENTICATED, Unauthenticated::NAMES);
    let defaults = PersonaAgent::default();
    assert_eq!(
        key(AGENT, "reply").default,
        Default::Word(defaults.reply.as_str())
    );
    assert_eq!(
        key(AGENT, "approval").default,
        Default::Word(defaults.approval.as_str())
    );
    assert_eq!(
        key(AGENT, "unauthenticated").default,
        Default::Word(defaults.unauthenticated.as_str())
    );
    assert_eq!(
        key(AGENT, "max_cc").default,
        Default::Count(DEFAULT_MAX_CC as u64)
    );
    assert_eq!(key(AGENT, "reply_all").default, Default::Flag(false));
    assert_eq!(key(AGENT, "html").default, Default::Flag(false));
    // The written defaults of the durations read as the defaults of the type.
    let Default::Word(give_up) = key(OUTBOX, "give_up_after").default else {
        panic!("a written default")
    };
    let Default::Word(attempt) = key(OUTBOX, "attempt_timeout").default else {
        panic!("a written default")
    };
    let o = outbox(&format!(
        "[outbox]\ngive_up_after = \"{give_up}\"\nattempt_timeout = \"{attempt}\""
    ));
    assert_eq!(
        (o.give_up_after, o.attempt_timeout),
        (DEFAULT_GIVE_UP_AFTER, DEFAULT_ATTEMPT_TIMEOUT)
    );
    // Every key of the tables is read: none is unknown to the reader.
    for (table, keys) in [("agent", AGENT), ("outbox", OUTBOX)] {
        for k in keys {
            let source = format!("[{table}]\n{} = 1", k.name);
            let unknown = format!("unknown key `{}`", k.name);
            if let Err(d) = parse(&source) {
                assert!(
                    d.iter().all(|d| !d.message().starts_with(&unknown)),
                    "{source}"
                );
            }
        }
    }
}

#[test]
fn the_json_schema_has_both_tables() {
    let schema = Registry::new().json_schema();
    for (table, keys) in [("agent", AGENT), ("outbox", OUTBOX)] {
        let properties = schema["properties"][table]["properties"]
            .as_object()
            .unwrap();
        let names: Vec<&str> = properties.keys().map(String::as_str).collect();
        let expected: Vec<&str> = keys.iter().map(|k| k.name).collect();
        assert_eq!(names, expected, "{table}");
        assert_eq!(
            schema["properties"][table]["additionalProperties"], false,
            "{table}"
        );
    }
    assert_eq!(
        schema["properties"]["agent"]["properties"]["reply"],
        serde_json::json!({
            "enum": ["send", "draft", "off"],
            "description": "`send` queues each reply for delivery, `draft` makes every reply wait for approval, `off` composes none",
            "default": "send"
        })
    );
    assert_eq!(
        schema["properties"]["outbox"]["properties"]["give_up_after"]["default"],
        "2d"
    );
}
