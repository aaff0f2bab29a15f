//! What one backend cannot hold never fails a message on another, nor its neighbours: dates
//! from 1970 to 9999 on every backend (MySQL/MariaDB binds them as `DATETIME`, not as a
//! 2038-bound `TIMESTAMP`), and attachments over MariaDB's `max_allowed_packet`.

#[path = "../../protege-core/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};

use base64::Engine as _;
use chrono::{DateTime, Utc};
use common::on_each_backend;
use protege::db::{self, EmlOptions, import_eml_paths};
use protege_core::{AppConfig, Chain, Context, DynChain, PersonaInfo, ThreadHistory, Trigger};
use serde_json::{Value, json};

const NOW: &str = "2026-07-01T12:00:00Z";

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).unwrap().to_utc()
}

fn options() -> EmlOptions {
    EmlOptions::new(vec!["support@acme.test".into()], at(NOW))
}

/// The dates every backend stores, first and last included.
const DATES: [&str; 5] = [
    "1970-01-01T00:00:00Z",
    "2038-01-19T03:14:07Z",
    "2038-01-19T03:14:08Z",
    "2100-02-28T12:34:56.123456Z",
    "9999-12-31T23:59:59Z",
];

/// The `sent_at` of each stored message, as RFC 3339.
async fn sent_at(db: &sea_orm::DatabaseConnection, ids: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for id in ids {
        let m = db::load_message(db, id).await.unwrap().expect("stored");
        out.push(
            m.sent_at
                .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
        );
    }
    out
}

/// Which of the bodies `body 0`, `body 1`, ... a reply run's `ThreadHistory` of `id` shows.
async fn history_bodies(db: &sea_orm::DatabaseConnection, id: &str) -> Vec<String> {
    let m = db::load_message(db, id).await.unwrap().expect("stored");
    let mut persona = PersonaInfo::new("support");
    persona.addresses = vec!["support@acme.test".into()];
    let ctx = Context::builder(persona, AppConfig::new("."), Trigger::Message(m.into()))
        .now(at(NOW))
        .db(db.clone())
        .build();
    let chain = DynChain::new().with(ThreadHistory::new());
    let text = serde_json::to_string(&chain.resolve(&ctx).await.unwrap()).unwrap();
    (0..DATES.len())
        .map(|i| format!("body {i}"))
        .filter(|body| text.contains(body.as_str()))
        .collect()
}

/// Fixture dates across MySQL's `TIMESTAMP` limit store and read back exactly, and a reply
/// run sees the thread whatever the date of its trigger; 1969 is refused with its JSON path.
#[tokio::test]
async fn fixture_dates_from_1970_to_9999_store_and_read_back_exactly() {
    on_each_backend("fixture_dates", |db, _| async move {
        let messages: Vec<Value> = DATES
            .iter()
            .enumerate()
            .map(|(i, at)| {
                json!({"message_id": format!("<d{i}@x>"), "direction": "inbound", "from": "a@x",
                       "to": [], "subject": "S", "sent_at": at, "text_body": format!("body {i}")})
            })
            .collect();
        let fixture = json!({"threads": [{"subject": "S", "messages": messages}]});
        let summary = db::import_fixture_str(&db, &fixture.to_string())
            .await
            .unwrap();
        assert_eq!(
            summary.to_string(),
            "imported 1 thread, 5 messages (0 already present)"
        );
        let ids: Vec<String> = (0..DATES.len()).map(|i| format!("<d{i}@x>")).collect();
        assert_eq!(
            sent_at(&db, &ids).await,
            [
                "1970-01-01T00:00:00Z",
                "2038-01-19T03:14:07Z",
                "2038-01-19T03:14:08Z",
                "2100-02-28T12:34:56.123456Z",
                "9999-12-31T23:59:59Z"
            ]
        );
        // The history of the last message holds the four before it, that of the third the
        // two before it.
        assert_eq!(
            history_bodies(&db, "<d4@x>").await,
            ["body 0", "body 1", "body 2", "body 3"]
        );
        assert_eq!(history_bodies(&db, "<d2@x>").await, ["body 0", "body 1"]);
        let stored = db::store_summary(&db, "<d3@x>", "so far", at("2100-03-01T00:00:00Z"))
            .await
            .unwrap();
        assert!(stored.is_some());

        let mut early = fixture.clone();
        early["threads"][0]["messages"][0]["sent_at"] = json!("1969-12-31T23:59:59Z");
        let err = db::import_fixture_str(&db, &early.to_string())
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "threads[0].messages[0].sent_at: timestamp `1969-12-31T23:59:59Z` is outside the years 1970 to 9999 (UTC)"
        );
    })
    .await;
}

/// One message as RFC 5322 text with the header `Date: {date}` and `extra` header lines.
fn eml(id: &str, date: &str, extra: &str) -> String {
    format!(
        "From: alice@example.com\nTo: support@acme.test\nSubject: Dates\nMessage-ID: {id}\n\
         Date: {date}\n{extra}\nHello.\n"
    )
}

fn write(dir: &Path, files: &[(String, String)]) -> Vec<PathBuf> {
    files
        .iter()
        .map(|(name, text)| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        })
        .collect()
}

/// `Date` headers across MySQL's `TIMESTAMP` limit store exactly by `import-eml` and over
/// `ingest_eml`; a date before 1970 (or after 3000, as mail-parser reads dates) is an
/// unusable date: the first dated `Received` or the
/// import time is used, with the warning, as for any impossible date.
#[tokio::test]
async fn eml_dates_from_1970_to_9999_store_and_read_back_exactly() {
    on_each_backend("eml_dates", |db, _| async move {
        let dir = tempfile::tempdir().unwrap();
        let headers = [
            "Thu, 1 Jan 1970 00:00:00 +0000",
            "Tue, 19 Jan 2038 03:14:07 +0000",
            "Tue, 19 Jan 2038 03:14:08 +0000",
            "Sun, 28 Feb 2100 12:34:56 +0000",
            // The last year a `Date` header may name (mail-parser's bound).
            "Wed, 31 Dec 3000 23:59:59 +0000",
        ];
        let files: Vec<(String, String)> = headers
            .iter()
            .enumerate()
            .map(|(i, date)| (format!("d{i}.eml"), eml(&format!("<d{i}@x>"), date, "")))
            .chain([
                (
                    "early.eml".to_owned(),
                    eml(
                        "<early@x>",
                        "Wed, 31 Dec 1969 23:59:59 +0000",
                        "Received: from mx.example.com; Mon, 5 Jan 2026 10:00:00 +0000\n",
                    ),
                ),
                (
                    "epoch-local.eml".to_owned(),
                    eml("<local@x>", "Thu, 1 Jan 1970 00:00:00 +0100", ""),
                ),
            ])
            .collect();
        let paths = write(dir.path(), &files);
        let summary = import_eml_paths(&db, &paths, &options()).await.unwrap();
        assert_eq!(
            summary.to_string(),
            format!(
                "warning: {}: missing or invalid `Date` header, using the first `Received` date 2026-01-05T10:00:00Z\n\
                 warning: {}: missing or invalid `Date` header and no dated `Received` header, using the import time 2026-07-01T12:00:00Z\n\
                 imported 7 messages, skipped 0 duplicates, 0 failed",
                paths[5].display(),
                paths[6].display()
            )
        );
        let ids: Vec<String> = (0..DATES.len())
            .map(|i| format!("<d{i}@x>"))
            .chain(["<early@x>".to_owned(), "<local@x>".to_owned()])
            .collect();
        assert_eq!(
            sent_at(&db, &ids).await,
            [
                "1970-01-01T00:00:00Z",
                "2038-01-19T03:14:07Z",
                "2038-01-19T03:14:08Z",
                "2100-02-28T12:34:56Z",
                "3000-12-31T23:59:59Z",
                "2026-01-05T10:00:00Z",
                "2026-07-01T12:00:00Z"
            ]
        );

        // The one-message path (`POST /v1/mail`) stores the same dates.
        let raw = eml("<http@x>", "Tue, 19 Jan 2038 03:14:08 +0000", "");
        let ingested = db::ingest_eml(&db, raw.as_bytes(), &options()).await.unwrap();
        assert!(ingested.imported);
        assert_eq!(
            sent_at(&db, &["<http@x>".to_owned()]).await,
            ["2038-01-19T03:14:08Z"]
        );
        let raw = eml("<http-early@x>", "Wed, 31 Dec 1969 23:59:59 +0000", "");
        let ingested = db::ingest_eml(&db, raw.as_bytes(), &options()).await.unwrap();
        assert_eq!(
            ingested.warnings,
            ["missing or invalid `Date` header and no dated `Received` header, using the import time 2026-07-01T12:00:00Z"]
        );
    })
    .await;
}

/// A message whose only date is one no backend stores (an import time outside 1970 to
/// 9999) is refused as invalid input, never as a database error: a per-file failure for
/// `import-eml`, the error kind of a 422 for `ingest_eml`; its neighbours are imported.
#[tokio::test]
async fn a_date_no_backend_stores_is_refused_as_invalid_input() {
    on_each_backend("date_refused", |db, _| async move {
        let dir = tempfile::tempdir().unwrap();
        let files = vec![
            ("a.eml".to_owned(), eml("<a@x>", "Mon, 5 Jan 2026 10:00:00 +0000", "")),
            ("undated.eml".to_owned(), eml("<u@x>", "someday", "")),
            ("b.eml".to_owned(), eml("<b@x>", "Mon, 5 Jan 2026 10:01:00 +0000", "")),
        ];
        let paths = write(dir.path(), &files);
        let mut opts = options();
        opts.now = at("1969-07-20T20:17:40Z");
        let summary = import_eml_paths(&db, &paths, &opts).await.unwrap();
        assert_eq!(
            summary.to_string(),
            format!(
                "failed: {}: the date of message `<u@x>` 1969-07-20T20:17:40Z is outside the years 1970 to 9999 (UTC) that the database stores\n\
                 imported 2 messages, skipped 0 duplicates, 1 failed",
                paths[1].display()
            )
        );
        assert!(!summary.failed[0].database);
        let err = db::ingest_eml(&db, files[1].1.as_bytes(), &opts)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), protege_core::ErrorKind::InvalidInput);
        assert_eq!(
            err.to_string(),
            "the date of message `<u@x>` 1969-07-20T20:17:40Z is outside the years 1970 to 9999 (UTC) that the database stores"
        );
        let err = db::store_summary(&db, "<a@x>", "so far", at("1969-07-20T20:17:40Z"))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the time of the summary 1969-07-20T20:17:40Z is outside the years 1970 to 9999 (UTC) that the database stores"
        );
    })
    .await;
}

/// 17 MiB: over MariaDB's default `max_allowed_packet` (16 MiB), under the 25 MiB cap.
const OVER_PACKET: usize = 17 << 20;

/// An mbox message with an attachment of `size` bytes.
fn with_attachment(id: &str, minute: u32, size: usize) -> String {
    let data = base64::engine::general_purpose::STANDARD.encode(vec![b'x'; size]);
    let mut wrapped = String::with_capacity(data.len() + data.len() / 76 + 1);
    for line in data.as_bytes().chunks(76) {
        wrapped.push_str(std::str::from_utf8(line).unwrap());
        wrapped.push('\n');
    }
    format!(
        "From alice@example.com Mon Jan  5 10:{minute:02}:00 2026\n\
         From: alice@example.com\nTo: support@acme.test\nSubject: Scan\nMessage-ID: {id}\n\
         Date: Mon, 5 Jan 2026 10:{minute:02}:00 +0000\nMIME-Version: 1.0\n\
         Content-Type: multipart/mixed; boundary=\"b\"\n\n--b\nContent-Type: text/plain\n\n\
         See the scan.\n--b\nContent-Type: application/pdf; name=\"scan.pdf\"\n\
         Content-Disposition: attachment; filename=\"scan.pdf\"\n\
         Content-Transfer-Encoding: base64\n\n{wrapped}--b--\n\n"
    )
}

/// An mbox message with a text body of `size` bytes.
fn with_body(id: &str, minute: u32, size: usize) -> String {
    let line = format!("{}\n", "y".repeat(75));
    format!(
        "From alice@example.com Mon Jan  5 10:{minute:02}:00 2026\n\
         From: alice@example.com\nTo: support@acme.test\nSubject: Log\nMessage-ID: {id}\n\
         Date: Mon, 5 Jan 2026 10:{minute:02}:00 +0000\n\n{}\n",
        line.repeat(size / line.len() + 1)
    )
}

/// An attachment over MariaDB's `max_allowed_packet` is kept as metadata only, with a
/// warning naming it and the server's limit; a message whose own text is over it is a
/// per-file failure (never a database error); the innocent messages beside them in the
/// same mbox are imported, on the first run and on a re-run. Other backends store all.
#[tokio::test]
async fn attachments_over_the_servers_packet_limit_are_kept_as_metadata() {
    on_each_backend("packet_limit", |db, backend| async move {
        let dir = tempfile::tempdir().unwrap();
        let simple = |id: &str, minute: u32| with_body(id, minute, 10);
        let text = [
            simple("<before@x>", 0),
            with_attachment("<scan@x>", 1, OVER_PACKET),
            simple("<between@x>", 2),
            with_body("<log@x>", 3, OVER_PACKET),
            simple("<after@x>", 4),
        ]
        .concat();
        let mbox = dir.path().join("inbox.mbox");
        std::fs::write(&mbox, text).unwrap();
        let summary = import_eml_paths(&db, std::slice::from_ref(&mbox), &options())
            .await
            .unwrap();
        let shown = mbox.display();
        let want = if backend == "mysql" {
            format!(
                "warning: {shown}#2: attachment `scan.pdf` ({OVER_PACKET} bytes) is too large for the database's `max_allowed_packet` of 16777216 bytes: its data is not stored\n\
                 failed: {shown}#4: the message's text (17825847 bytes) is too large for the database's `max_allowed_packet` of 16777216 bytes: it cannot be stored\n\
                 imported 4 messages, skipped 0 duplicates, 1 failed"
            )
        } else {
            "imported 5 messages, skipped 0 duplicates, 0 failed".to_owned()
        };
        assert_eq!(summary.to_string(), want);
        let scan = db::load_message(&db, "<scan@x>").await.unwrap().unwrap();
        let att = &scan.attachments[0];
        assert_eq!(
            (att.filename.as_str(), att.byte_size, att.data.as_ref().map(Vec::len)),
            (
                "scan.pdf",
                OVER_PACKET as i64,
                (backend != "mysql").then_some(OVER_PACKET)
            )
        );
        for id in ["<before@x>", "<between@x>", "<after@x>"] {
            assert!(db::load_message(&db, id).await.unwrap().is_some(), "{id}");
        }
        let again = import_eml_paths(&db, std::slice::from_ref(&mbox), &options())
            .await
            .unwrap();
        let want = if backend == "mysql" {
            format!(
                "failed: {shown}#4: the message's text (17825847 bytes) is too large for the database's `max_allowed_packet` of 16777216 bytes: it cannot be stored\n\
                 imported 0 messages, skipped 4 duplicates, 1 failed"
            )
        } else {
            "imported 0 messages, skipped 5 duplicates, 0 failed".to_owned()
        };
        assert_eq!(again.to_string(), want);

        // Over HTTP's one-message path: the attachment is metadata, the text a 422.
        let one = with_attachment("<scan-2@x>", 5, OVER_PACKET);
        let ingested = db::ingest_eml(&db, one.as_bytes(), &options()).await.unwrap();
        assert!(ingested.imported);
        let one = with_body("<log-2@x>", 6, OVER_PACKET);
        let outcome = db::ingest_eml(&db, one.as_bytes(), &options()).await;
        if backend == "mysql" {
            let err = outcome.unwrap_err();
            assert_eq!(err.kind(), protege_core::ErrorKind::InvalidInput);
            assert_eq!(
                err.to_string(),
                "the message's text (17825850 bytes) is too large for the database's `max_allowed_packet` of 16777216 bytes: it cannot be stored"
            );
        } else {
            assert!(outcome.unwrap().imported);
        }
    })
    .await;
}

/// A message that ends the whole transaction (an error of SQLSTATE class 08, a connection
/// exception, as MySQL's "packet too large" is) fails alone: the messages stored before it
/// in the same transaction are stored again, not reported as failed.
#[tokio::test]
async fn a_message_that_ends_the_transaction_fails_alone() {
    on_each_backend("txn_lost", |db, backend| async move {
        use sea_orm::ConnectionTrait;
        let statements: Vec<&str> = match backend {
            "postgres" => vec![
                "CREATE FUNCTION lose_me() RETURNS trigger AS $$ BEGIN IF NEW.subject = 'lose me' THEN RAISE EXCEPTION 'connection lost' USING ERRCODE = '08006'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql",
                "CREATE TRIGGER lose_me BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION lose_me()",
            ],
            "mysql" => vec![
                "CREATE TRIGGER lose_me BEFORE INSERT ON messages FOR EACH ROW BEGIN IF NEW.subject = 'lose me' THEN SIGNAL SQLSTATE '08S01' SET MESSAGE_TEXT = 'connection lost'; END IF; END",
            ],
            // SQLite errors have no SQLSTATE.
            _ => return,
        };
        for sql in statements {
            db.execute_unprepared(sql).await.expect(sql);
        }
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::new();
        for (i, subject) in ["First", "Second", "lose me", "Fourth"].iter().enumerate() {
            text.push_str(&format!(
                "From a@b Mon Jan  5 0{i}:00:00 2026\nFrom: a{i}@example.com\nTo: support@acme.test\n\
                 Subject: {subject}\nMessage-ID: <m{i}@x>\nDate: Mon, 5 Jan 2026 0{i}:00:00 +0000\n\nHi.\n\n"
            ));
        }
        let mbox = dir.path().join("box.mbox");
        std::fs::write(&mbox, text).unwrap();
        let summary = import_eml_paths(&db, std::slice::from_ref(&mbox), &options())
            .await
            .unwrap();
        assert_eq!(
            summary.to_string(),
            format!(
                "failed: database error while importing {}#3: connection lost\n\
                 imported 3 messages, skipped 0 duplicates, 1 failed",
                mbox.display()
            )
        );
        for id in ["<m0@x>", "<m1@x>", "<m3@x>"] {
            assert!(db::load_message(&db, id).await.unwrap().is_some(), "{id}");
        }
    })
    .await;
}

/// A fixture whose attachment is too large for MariaDB's `max_allowed_packet` is refused
/// with its JSON path before anything is written (fixtures stay all-or-nothing); other
/// backends import it.
#[tokio::test]
async fn a_fixture_attachment_over_the_servers_packet_limit_is_refused() {
    on_each_backend("fixture_packet", |db, backend| async move {
        let data = base64::engine::general_purpose::STANDARD.encode(vec![b'x'; OVER_PACKET]);
        let fixture = json!({"threads": [{"subject": "Scan", "messages": [
            {"message_id": "<ok@x>", "direction": "inbound", "from": "a@x", "to": [],
             "subject": "Scan", "sent_at": "2026-01-05T10:00:00Z", "text_body": "hi"},
            {"message_id": "<scan@x>", "direction": "inbound", "from": "a@x", "to": [],
             "subject": "Scan", "sent_at": "2026-01-05T10:01:00Z",
             "attachments": [{"id": "scan-1", "filename": "scan.pdf",
                              "content_type": "application/pdf", "byte_size": OVER_PACKET,
                              "data_base64": data}]}
        ]}]});
        let outcome = db::import_fixture_str(&db, &fixture.to_string()).await;
        if backend == "mysql" {
            let err = outcome.unwrap_err();
            assert_eq!(err.kind(), protege_core::ErrorKind::Fixture);
            assert_eq!(
                err.to_string(),
                "threads[0].messages[1].attachments[0].data_base64: 17825792 bytes of data are too large for the database's `max_allowed_packet` of 16777216 bytes"
            );
            assert!(db::load_message(&db, "<ok@x>").await.unwrap().is_none());
        } else {
            assert_eq!(
                outcome.unwrap().to_string(),
                "imported 1 thread, 2 messages (0 already present)"
            );
        }
    })
    .await;
}
