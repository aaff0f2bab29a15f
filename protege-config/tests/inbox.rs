//! The `[inbox]` table (DESIGN §19): the IMAP folder a persona's mail is fetched from, read
//! with its defaults, every mistake reported at its place, and one mailbox per persona.

use std::path::Path;
use std::time::Duration;

use protege_config::{Persona, PersonaSet, Registry};
use protege_core::{InboxAfter, PersonaInbox, TlsMode};

/// A reply chain, so that the rest of each file is valid.
const CHAIN: &str = "\n[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"Hello.\"\n";

fn parse(source: &str) -> Result<Persona, protege_config::Diagnostics> {
    Persona::parse(
        Path::new("p.toml"),
        &format!("{source}\n{CHAIN}"),
        &Registry::new(),
    )
}

fn inbox(source: &str) -> PersonaInbox {
    match parse(source) {
        Ok(p) => p.info.inbox.clone().expect("an [inbox] table"),
        Err(d) => panic!("{source}\n{d}"),
    }
}

/// The headlines of the problems of `source`, which must not load.
fn errors(source: &str) -> Vec<String> {
    match parse(source) {
        Ok(_) => panic!("loaded: {source}"),
        Err(d) => d.iter().map(|d| d.headline()).collect(),
    }
}

const MINIMAL: &str = "[inbox]\nimap = \"imaps://imap.acme.test\"\nuser = \"support@acme.test\"\npassword_env = \"SUPPORT_IMAP_PASSWORD\"\n";

#[test]
fn the_minimal_inbox_reads_the_inbox_folder_over_tls_and_marks_mail_seen() {
    assert_eq!(
        inbox(MINIMAL),
        PersonaInbox {
            host: "imap.acme.test".into(),
            port: 993,
            security: TlsMode::Implicit,
            folder: "INBOX".into(),
            user: "support@acme.test".into(),
            password_env: "SUPPORT_IMAP_PASSWORD".into(),
            after: InboxAfter::Seen,
            since: None,
            poll: Duration::from_secs(60),
            sent: None,
            ca_file: None,
        }
    );
    assert_eq!(
        inbox(MINIMAL).key(),
        "support@acme.test@imap.acme.test:993/INBOX"
    );
}

#[test]
fn every_key_is_read() {
    let got = inbox(
        "[inbox]\nimap = \"imap://127.0.0.1:1143/Support/New\"\ntls = \"none\"\nuser = \"kim\"\npassword_env = \"PW\"\nafter = \"move:Support/Done\"\nsince = \"2026-11-30\"\npoll = \"30s\"\nsent = \"Sent Items\"\nca_file = \"certs/ca.pem\"\n",
    );
    assert_eq!(
        got,
        PersonaInbox {
            host: "127.0.0.1".into(),
            port: 1143,
            security: TlsMode::None,
            folder: "Support/New".into(),
            user: "kim".into(),
            password_env: "PW".into(),
            after: InboxAfter::Move("Support/Done".into()),
            since: Some(chrono::NaiveDate::from_ymd_opt(2026, 11, 30).unwrap()),
            poll: Duration::from_secs(30),
            sent: Some("Sent Items".into()),
            ca_file: Some("certs/ca.pem".into()),
        }
    );
    assert_eq!(got.key_of("Sent Items"), "kim@127.0.0.1:1143/Sent Items");
    assert_eq!(
        inbox("[inbox]\nimap = \"imap://imap.acme.test\"\nuser = \"u\"\npassword_env = \"PW\"\n")
            .security,
        TlsMode::StartTls
    );
}

#[test]
fn mistakes_are_reported_at_their_place() {
    let cases: &[(&str, &str)] = &[
        (
            "[inbox]\nuser = \"u\"\npassword_env = \"PW\"\n",
            "p.toml:1:1: error: `[inbox]` needs `imap`",
        ),
        (
            "[inbox]\nimap = \"imaps://kim:pw@imap.acme.test\"\nuser = \"u\"\npassword_env = \"PW\"\n",
            "p.toml:2:8: error: invalid `imap` URL: the login goes in `user` and `password_env`, not in the URL",
        ),
        (
            "[inbox]\nimap = \"pop3://mail.acme.test\"\nuser = \"u\"\npassword_env = \"PW\"\n",
            "p.toml:2:8: error: invalid `imap` URL: expected `imaps://host[:port][/FOLDER]` (TLS from the first byte) or `imap://host[:port][/FOLDER]` (STARTTLS)",
        ),
        (
            "[inbox]\nimap = \"imap://imap.acme.test\"\ntls = \"none\"\nuser = \"u\"\npassword_env = \"PW\"\n",
            "p.toml:3:7: error: `tls = \"none\"` is accepted only for a loopback host (`localhost`, `127.0.0.0/8`, `[::1]`), and `imap.acme.test` is not one: the password and the mail would cross the network in plain text",
        ),
        (
            "[inbox]\nimap = \"imaps://127.0.0.1\"\ntls = \"none\"\nuser = \"u\"\npassword_env = \"PW\"\n",
            "p.toml:3:7: error: `tls = \"none\"` contradicts `imaps://`, which is TLS from the first byte: use `imap://` for a plain-text loopback server",
        ),
        (
            "[inbox]\nimap = \"imaps://imap.acme.test\"\nuser = \"u\"\npassword_env = \"hunter2!\"\n",
            "p.toml:4:16: error: `password_env` must be the name of an environment variable (ASCII letters, digits and `_`, not starting with a digit), not its value",
        ),
        (
            "[inbox]\nimap = \"imaps://imap.acme.test\"\nuser = \"u\"\npassword_env = \"PW\"\nafter = \"delete\"\n",
            "p.toml:5:9: error: unknown `after` value `delete`, expected `seen` or `move:FOLDER`",
        ),
        (
            "[inbox]\nimap = \"imaps://imap.acme.test\"\nuser = \"u\"\npassword_env = \"PW\"\nafter = \"move:\"\n",
            "p.toml:5:9: error: invalid folder in `after`: the name is empty",
        ),
        (
            "[inbox]\nimap = \"imaps://imap.acme.test\"\nuser = \"u\"\npassword_env = \"PW\"\nsince = \"30/11/2026\"\n",
            "p.toml:5:9: error: `since` must be a day written `YYYY-MM-DD`, such as `\"2026-01-31\"`; found `30/11/2026`",
        ),
        (
            "[inbox]\nimap = \"imaps://imap.acme.test\"\nuser = \"u\"\npassword_env = \"PW\"\nsent = \"INBOX\"\n",
            "p.toml:5:8: error: `sent` names `INBOX`, the folder `imap` reads: the sent mail needs a folder of its own",
        ),
        (
            "[inbox]\nimap = \"imaps://imap.acme.test\"\nuser = \"u\"\npassword_env = \"PW\"\npol = \"30s\"\n",
            "p.toml:5:1: error: unknown key `pol` in `[inbox]`, did you mean `poll`?",
        ),
    ];
    for (source, expected) in cases {
        assert_eq!(errors(source), vec![expected.to_string()], "{source}");
    }
}

#[test]
fn two_personas_cannot_read_one_mailbox() {
    let dir = tempfile::tempdir().unwrap();
    let inbox = "[inbox]\nimap = \"imaps://IMAP.acme.test/INBOX\"\nuser = \"support@acme.test\"\npassword_env = \"PW\"\n";
    std::fs::write(dir.path().join("a.toml"), format!("{inbox}{CHAIN}")).unwrap();
    // The same folder, the host written in another case.
    let other = inbox.replace("IMAP.acme.test/INBOX", "imap.acme.test");
    std::fs::write(dir.path().join("b.toml"), format!("{other}{CHAIN}")).unwrap();
    let (set, diagnostics) = PersonaSet::load(dir.path()).unwrap();
    let problems: Vec<String> = diagnostics.iter().map(|d| d.headline()).collect();
    let b = dir.path().join("b.toml");
    assert_eq!(
        problems,
        vec![format!(
            "{}:2:8: error: the mailbox `support@acme.test@imap.acme.test:993/INBOX` is read by persona `a` too (`{}`): one mailbox has one persona, or its mail would be answered twice",
            b.display(),
            dir.path().join("a.toml").display()
        )]
    );
    assert_eq!(set.names(), vec!["a".to_owned()]);
}
