// Tests may stay long: one import case after another, each self-contained.
//! `import_eml_paths`: RFC 5322 and mbox files into threads, on SQLite and on the
//! PostgreSQL / MariaDB servers named by `PROTEGE_TEST_POSTGRES_URL` /
//! `PROTEGE_TEST_MYSQL_URL`.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use futures::FutureExt as _;
use protege::Direction;
use protege::db::entities::{attachment, email_thread, message};
use protege::db::{self, EmlFailure, EmlOptions, EmlSummary, StoredEml, import_eml_paths};
use protege_core::{AppConfig, Chain, Context, DynChain, PersonaInfo, ThreadHistory, Trigger};
use sea_orm::{ConnectionTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryOrder};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// One fresh database per test and backend.

fn backends() -> Vec<(&'static str, Option<String>)> {
    let mut out = vec![("sqlite", None)];
    for (name, var) in [
        ("postgres", "PROTEGE_TEST_POSTGRES_URL"),
        ("mysql", "PROTEGE_TEST_MYSQL_URL"),
    ] {
        if let Ok(url) = std::env::var(var)
            && !url.is_empty()
        {
            out.push((name, Some(url)));
        }
    }
    out
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// `url` with its database path replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let scheme_end = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[scheme_end..];
    let path_start = rest.find('/').map_or(url.len(), |i| scheme_end + i);
    let query = url[path_start..]
        .find('?')
        .map(|i| &url[path_start + i..])
        .unwrap_or("");
    format!("{}/{name}{query}", &url[..path_start])
}

async fn admin_sql(server: &str, sql: &str) {
    let admin = db::connect(server).await.expect("test server");
    admin.execute_unprepared(sql).await.expect(sql);
    admin.close().await.ok();
}

/// Runs `body` once per backend on a fresh migrated database, dropped afterwards.
async fn on_each_backend<F, Fut>(test: &str, body: F)
where
    F: Fn(DatabaseConnection) -> Fut,
    Fut: Future<Output = ()>,
{
    for (backend, server) in backends() {
        let name = format!(
            "pt_eml_{}_{}_{}",
            test.chars().take(24).collect::<String>(),
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let conn = match &server {
            None => db::open("sqlite::memory:").await.expect("sqlite"),
            Some(server) => {
                let create = if backend == "mysql" {
                    format!("CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
                } else {
                    format!("CREATE DATABASE \"{name}\"")
                };
                admin_sql(server, &create).await;
                db::open(&with_database(server, &name))
                    .await
                    .expect("fresh database")
            }
        };
        let outcome = AssertUnwindSafe(body(conn.clone())).catch_unwind().await;
        conn.close().await.ok();
        if let Some(server) = &server {
            let drop = if backend == "mysql" {
                format!("DROP DATABASE IF EXISTS `{name}`")
            } else {
                format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")
            };
            admin_sql(server, &drop).await;
        }
        if let Err(panic) = outcome {
            eprintln!("test `{test}` failed on backend `{backend}`");
            std::panic::resume_unwind(panic);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Helpers.

fn data_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/eml"))
}

fn file(name: &str) -> PathBuf {
    data_dir().join(name)
}

fn shown(name: &str) -> String {
    file(name).display().to_string()
}

fn options() -> EmlOptions {
    EmlOptions::new(
        vec!["Acme Support <SUPPORT@acme.test>".into()],
        "2026-07-01T12:00:00Z".parse().unwrap(),
    )
}

async fn import(db: &DatabaseConnection, paths: &[PathBuf]) -> EmlSummary {
    import_eml_paths(db, paths, &options())
        .await
        .expect("import")
}

/// A stored message as JSON: its row, its thread's subject and its attachments.
async fn stored(db: &DatabaseConnection, message_id: &str) -> Value {
    let m = db::load_message(db, message_id)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{message_id} not stored"));
    let thread = email_thread::Entity::find_by_id(m.thread_id)
        .one(db)
        .await
        .unwrap()
        .expect("thread");
    let attachments: Vec<Value> = m
        .attachments
        .iter()
        .map(|a| {
            json!({
                "id": a.attachment_id,
                "filename": a.filename,
                "content_type": a.content_type,
                "byte_size": a.byte_size,
                "data_base64": a.data.as_deref().map(|d| base64::engine::general_purpose::STANDARD.encode(d)),
            })
        })
        .collect();
    json!({
        "thread": thread.subject,
        "direction": m.direction.as_str(),
        "from": m.from,
        "to": m.to,
        "cc": m.cc,
        "subject": m.subject,
        "sent_at": protege_core::rfc3339_z(&m.sent_at),
        "text_body": m.text_body,
        "html_body": m.html_body,
        "in_reply_to": m.in_reply_to,
        "attachments": attachments,
    })
}

/// Every thread as `(subject, created_at, [message ids in id order])`, in thread id order.
async fn threads(db: &DatabaseConnection) -> Vec<(String, String, Vec<String>)> {
    let messages = message::Entity::find()
        .order_by_asc(message::Column::Id)
        .all(db)
        .await
        .unwrap();
    email_thread::Entity::find()
        .order_by_asc(email_thread::Column::Id)
        .all(db)
        .await
        .unwrap()
        .into_iter()
        .map(|t| {
            let ids = messages
                .iter()
                .filter(|m| m.email_thread_id == t.id)
                .map(|m| m.message_id.clone())
                .collect();
            (t.subject, protege_core::rfc3339_z(&t.created_at), ids)
        })
        .collect()
}

fn thread(subject: &str, created_at: &str, ids: &[&str]) -> (String, String, Vec<String>) {
    (
        subject.to_owned(),
        created_at.to_owned(),
        ids.iter().map(|s| (*s).to_owned()).collect(),
    )
}

fn failure(source: String, reason: &str) -> EmlFailure {
    EmlFailure {
        source,
        reason: reason.to_owned(),
        database: false,
    }
}

const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUmZha2UtcG5nLWJ5dGVzAP8=";
const NO_ID: &str =
    "<125612aef2a75e85c89e884f0db672ab07df0570181d498d0685ae3fea0bc104@protege.invalid>";

fn folder_summary_text() -> String {
    format!(
        "warning: {}: missing or invalid `Date` header and no dated `Received` header, using the import time 2026-07-01T12:00:00Z\n\
         warning: {}: missing or invalid `Date` header, using the first `Received` date 2026-01-17T12:05:06Z\n\
         warning: {}: no `Message-ID` header, using `{NO_ID}`\n\
         failed: {}#5: not an email: no header found\n\
         failed: {}: not an email: no header found\n\
         imported 26 messages, skipped 0 duplicates, 2 failed",
        shown("bad-date.eml"),
        shown("no-date-received.eml"),
        shown("no-message-id.eml"),
        shown("archive.mbox"),
        shown("garbage.eml"),
    )
}

// ---------------------------------------------------------------------------------------
// Tests.

#[tokio::test]
async fn imports_a_folder_with_exact_values() {
    on_each_backend("folder", |db| async move {
        let summary = import(&db, &[data_dir()]).await;
        assert_eq!(summary.imported, 26);
        assert_eq!(summary.duplicates, 0);
        assert_eq!(
            summary.failed,
            vec![
                failure(
                    format!("{}#5", shown("archive.mbox")),
                    "not an email: no header found"
                ),
                failure(shown("garbage.eml"), "not an email: no header found"),
            ]
        );
        assert_eq!(summary.to_string(), folder_summary_text());

        assert_eq!(
            stored(&db, "<plain-1@example.com>").await,
            json!({
                "thread": "Order A-1 arrived damaged", "direction": "inbound",
                "from": "Alice Martin <alice@example.com>", "to": ["support@acme.test"],
                "cc": ["Bob Stone <bob@example.com>", "carol@example.com"],
                "subject": "Order A-1 arrived damaged", "sent_at": "2026-01-05T09:00:00Z",
                "text_body": "Hello,\n\nmy order A-1 arrived with a broken lid.\n\nAlice\n",
                "html_body": null, "in_reply_to": null, "attachments": [],
            })
        );
        // The persona address in another case and header form: outbound; joins its parent.
        assert_eq!(
            stored(&db, "<out-1@acme.test>").await,
            json!({
                "thread": "Order A-1 arrived damaged", "direction": "outbound",
                "from": "Acme Support <Support@ACME.test>", "to": ["Alice Martin <alice@example.com>"],
                "cc": [], "subject": "Re: Order A-1 arrived damaged", "sent_at": "2026-01-05T12:00:00Z",
                "text_body": "Sorry about that, a new lid is on its way.\n",
                "html_body": null, "in_reply_to": "<plain-1@example.com>", "attachments": [],
            })
        );
        assert_eq!(
            stored(&db, "<html-1@example.com>").await,
            json!({
                "thread": "Invoice question", "direction": "inbound",
                "from": "Dana White <dana@example.com>", "to": ["Support <support@acme.test>"],
                "cc": [], "subject": "Invoice question", "sent_at": "2026-01-06T08:30:00Z",
                "text_body": null,
                "html_body": "<html><body><p>Hi &amp; hello,</p><p>where is my <b>invoice</b>?<br>Thanks</p></body></html>\n",
                "in_reply_to": null, "attachments": [],
            })
        );
        assert_eq!(
            stored(&db, "<alt-1@example.com>").await,
            json!({
                "thread": "Delivery window", "direction": "inbound",
                "from": "Erin <erin@example.com>", "to": ["support@acme.test"], "cc": [],
                "subject": "Delivery window", "sent_at": "2026-01-07T14:15:00Z",
                "text_body": "Can you deliver on Friday?",
                "html_body": "<p>Can you deliver on <i>Friday</i>?</p>",
                "in_reply_to": null, "attachments": [],
            })
        );
        assert_eq!(
            stored(&db, "<att-1@example.com>").await,
            json!({
                "thread": "Receipt attached", "direction": "inbound",
                "from": "Frank <frank@example.com>", "to": ["support@acme.test"], "cc": [],
                "subject": "Receipt attached", "sent_at": "2026-01-08T11:00:00Z",
                "text_body": "Here is the receipt.", "html_body": null, "in_reply_to": null,
                "attachments": [{
                    "id": "att-e9ca32255dea136731201b94", "filename": "receipt.pdf",
                    "content_type": "application/pdf", "byte_size": 51,
                    "data_base64": "JVBERi0xLjQKMSAwIG9iaiA8PCAvVHlwZSAvQ2F0YWxvZyA+PiBlbmRvYmoKJSVFT0YK",
                }],
            })
        );
        // An inline image without a name is an attachment named after its part.
        assert_eq!(
            stored(&db, "<inline-1@example.com>").await,
            json!({
                "thread": "Photo of the damage", "direction": "inbound",
                "from": "Gina <gina@example.com>", "to": ["support@acme.test"], "cc": [],
                "subject": "Photo of the damage", "sent_at": "2026-01-09T12:00:00Z",
                "text_body": null, "html_body": "<p>See the photo:</p><img src=\"cid:photo1\">",
                "in_reply_to": null,
                "attachments": [{
                    "id": "att-21f62c79ab43485dd49efdb8", "filename": "part-2.png",
                    "content_type": "image/png", "byte_size": 32, "data_base64": PNG_B64,
                }],
            })
        );
        assert_eq!(
            stored(&db, "<qp-1@example.com>").await["text_body"],
            json!("Bonjour, le colis est arrivé abîmé. Pouvez-vous m'envoyer un nouveau couvercle le plus rapidement possible, s'il vous plaît ?\n")
        );
        assert_eq!(
            stored(&db, "<qp-1@example.com>").await["sent_at"],
            json!("2026-01-10T06:45:00Z")
        );
        assert_eq!(
            stored(&db, "<b64-1@example.com>").await["text_body"],
            json!("Grüße aus München — das Paket fehlt.\n")
        );
        assert_eq!(
            stored(&db, "<latin1-1@example.com>").await["text_body"],
            json!("Ça coûte trop cher, déjà payé à l'été.\n")
        );
        assert_eq!(
            stored(&db, "<sjis-1@example.jp>").await,
            json!({
                "thread": "注文について", "direction": "inbound",
                "from": "Kenji <kenji@example.jp>", "to": ["support@acme.test"], "cc": [],
                "subject": "注文について", "sent_at": "2026-01-13T00:00:00Z",
                "text_body": "こんにちは。注文A-1の状況を教えてください。\n",
                "html_body": null, "in_reply_to": null, "attachments": [],
            })
        );
        assert_eq!(
            stored(&db, "<ew-1@example.com>").await,
            json!({
                "thread": "Café order – refund", "direction": "inbound",
                "from": "Renée Dupré <renee@example.com>", "to": ["Support ✓ <support@acme.test>"],
                "cc": [], "subject": "Café order – refund", "sent_at": "2026-01-14T10:00:00Z",
                "text_body": "Merci.\n", "html_body": null, "in_reply_to": null, "attachments": [],
            })
        );
        assert_eq!(
            stored(&db, "<nested-1@example.com>").await,
            json!({
                "thread": "Nested parts", "direction": "inbound",
                "from": "Liam <liam@example.com>", "to": ["support@acme.test"], "cc": [],
                "subject": "Nested parts", "sent_at": "2026-01-15T10:00:00Z",
                "text_body": "Plain version with a logo.",
                "html_body": "<p>HTML version with a logo <img src=\"cid:logo\"></p>",
                "in_reply_to": null,
                "attachments": [
                    {"id": "att-2dc3d55193f632ce4fccb0e9", "filename": "logo.png",
                     "content_type": "image/png", "byte_size": 32, "data_base64": PNG_B64},
                    {"id": "att-a30fdef67d578f3bff8b7a19", "filename": "items.csv",
                     "content_type": "text/csv", "byte_size": 13, "data_base64": "c2t1LHF0eQpBLTEsMg=="},
                ],
            })
        );
        assert_eq!(
            stored(&db, "<groups-1@example.com>").await,
            json!({
                "thread": "Group addresses", "direction": "inbound", "from": "paul@example.com",
                "to": ["ann@example.com", "Ben <ben@example.com>", "support@acme.test", "extra@example.com"],
                "cc": [], "subject": "Group addresses", "sent_at": "2026-01-20T10:00:00Z",
                "text_body": "Groups and several To headers.\n", "html_body": null,
                "in_reply_to": null, "attachments": [],
            })
        );
        assert_eq!(
            stored(&db, "<crlf-1@example.com>").await["text_body"],
            json!("First line.\nSecond line.\n")
        );
        // A forwarded message is kept whole as a message/rfc822 attachment; the `Fwd:`
        // thread is separate from the original (no References).
        assert_eq!(
            stored(&db, "<fwd-1@example.com>").await,
            json!({
                "thread": "Order A-1 arrived damaged", "direction": "inbound",
                "from": "Rita <rita@example.com>", "to": ["support@acme.test"], "cc": [],
                "subject": "Fwd: Order A-1 arrived damaged", "sent_at": "2026-01-22T10:00:00Z",
                "text_body": "Forwarding the original.", "html_body": null, "in_reply_to": null,
                "attachments": [{
                    "id": "att-30855a9acd9d3c741ad36b95", "filename": "part-2.eml",
                    "content_type": "message/rfc822", "byte_size": 142,
                    "data_base64": "RnJvbTogQWxpY2UgTWFydGluIDxhbGljZUBleGFtcGxlLmNvbT4KVG86IHN1cHBvcnRAYWNtZS50ZXN0ClN1YmplY3Q6IE9yZGVyIEEtMSBhcnJpdmVkIGRhbWFnZWQKTWVzc2FnZS1JRDogPGlubmVyLTFAZXhhbXBsZS5jb20+CgpCcm9rZW4gbGlkLg==",
                }],
            })
        );
        // Fallbacks: hashed Message-ID, Received date, import time.
        assert_eq!(
            stored(&db, NO_ID).await["text_body"],
            json!("This message has no Message-ID.\n")
        );
        assert_eq!(
            stored(&db, "<nodate-1@example.com>").await["sent_at"],
            json!("2026-01-17T12:05:06Z")
        );
        assert_eq!(
            stored(&db, "<baddate-1@example.com>").await["sent_at"],
            json!("2026-07-01T12:00:00Z")
        );

        let all = threads(&db).await;
        assert_eq!(all.len(), 20);
        assert!(all.contains(&thread(
            "Order A-1 arrived damaged",
            "2026-01-05T09:00:00Z",
            &["<plain-1@example.com>", "<out-1@acme.test>"],
        )));
        assert!(all.contains(&thread(
            "Refund for order A-1",
            "2026-02-02T09:00:00Z",
            &["<refund-1@example.com>", "<refund-2@acme.test>", "<refund-3@example.com>", "<refund-4@example.com>"],
        )));
    })
    .await;
}

#[tokio::test]
async fn reimport_is_idempotent_and_keeps_attachment_ids() {
    on_each_backend("reimport", |db| async move {
        import(&db, &[data_dir()]).await;
        let before = threads(&db).await;
        let summary = import(&db, &[data_dir()]).await;
        assert_eq!(
            summary.to_string(),
            format!(
                "failed: {}#5: not an email: no header found\n\
                 failed: {}: not an email: no header found\n\
                 imported 0 messages, skipped 26 duplicates, 2 failed",
                shown("archive.mbox"),
                shown("garbage.eml")
            )
        );
        assert_eq!(threads(&db).await, before);
        assert_eq!(message::Entity::find().count(&db).await.unwrap(), 26);
        assert_eq!(attachment::Entity::find().count(&db).await.unwrap(), 6);
        assert_eq!(
            stored(&db, "<refund-3@example.com>").await["attachments"][0]["id"],
            json!("att-3c4cecbd1efe9a4e2eea5126")
        );
    })
    .await;
}

#[tokio::test]
async fn an_mbox_is_split_unescaped_and_threaded() {
    on_each_backend("mbox", |db| async move {
        let summary = import(&db, &[file("archive.mbox")]).await;
        assert_eq!(
            summary.to_string(),
            format!(
                "failed: {}#5: not an email: no header found\n\
                 imported 4 messages, skipped 0 duplicates, 1 failed",
                shown("archive.mbox")
            )
        );
        assert_eq!(
            threads(&db).await,
            vec![
                thread(
                    "Lid colour",
                    "2026-02-09T09:00:00Z",
                    &["<mbox-1@example.com>", "<mbox-2@acme.test>", "<mbox-3@example.com>"],
                ),
                thread(
                    "Opening hours",
                    "2026-02-10T08:00:00Z",
                    &["<mbox-4@example.com>"]
                ),
            ]
        );
        assert_eq!(
            stored(&db, "<mbox-1@example.com>").await["text_body"],
            json!("Which colours does the lid come in?\nFrom the catalogue I only see red.\n")
        );
        assert_eq!(
            stored(&db, "<mbox-2@acme.test>").await,
            json!({
                "thread": "Lid colour", "direction": "outbound",
                "from": "Acme Support <support@acme.test>", "to": ["Alice Martin <alice@example.com>"],
                "cc": [], "subject": "Re: Lid colour", "sent_at": "2026-02-09T10:00:00Z",
                "text_body": "Red and blue.\n", "html_body": null,
                "in_reply_to": "<mbox-1@example.com>", "attachments": [],
            })
        );
    })
    .await;
}

#[tokio::test]
async fn a_bad_file_is_reported_and_the_rest_imported() {
    on_each_backend("bad_file", |db| async move {
        let summary = import(
            &db,
            &[file("garbage.eml"), file("missing.eml"), file("plain.eml")],
        )
        .await;
        assert_eq!(
            summary,
            EmlSummary {
                imported: 1,
                duplicates: 0,
                erased: 0,
                failed: vec![
                    failure(shown("garbage.eml"), "not an email: no header found"),
                    failure(
                        shown("missing.eml"),
                        "cannot read: no such file or directory (os error 2)"
                    ),
                ],
                warnings: vec![],
                stored: vec![StoredEml {
                    source: shown("plain.eml"),
                    message_id: "<plain-1@example.com>".into(),
                    thread_id: 1,
                    direction: Direction::Inbound,
                }],
            }
        );
        assert_eq!(message::Entity::find().count(&db).await.unwrap(), 1);
    })
    .await;
}

const REFUND: [&str; 4] = [
    "refund-1.eml",
    "refund-2.eml",
    "refund-3.eml",
    "refund-4.eml",
];

fn refund_thread() -> Vec<(String, String, Vec<String>)> {
    vec![thread(
        "Refund for order A-1",
        "2026-02-02T09:00:00Z",
        &[
            "<refund-1@example.com>",
            "<refund-2@acme.test>",
            "<refund-3@example.com>",
            "<refund-4@example.com>",
        ],
    )]
}

/// The message ids of `threads` sorted, so orders of insertion compare equal.
fn sorted(mut all: Vec<(String, String, Vec<String>)>) -> Vec<(String, String, Vec<String>)> {
    for t in &mut all {
        t.2.sort();
    }
    all
}

#[tokio::test]
async fn replies_out_of_order_end_in_one_thread() {
    on_each_backend("out_of_order", |db| async move {
        // Newest first, in one import: replies arrive before what they reply to.
        let paths: Vec<PathBuf> = REFUND.iter().rev().map(|n| file(n)).collect();
        let summary = import(&db, &paths).await;
        assert_eq!(
            summary.to_string(),
            "imported 4 messages, skipped 0 duplicates, 0 failed"
        );
        assert_eq!(sorted(threads(&db).await), refund_thread());
    })
    .await;
}

#[tokio::test]
async fn replies_out_of_order_across_imports_end_in_one_thread() {
    on_each_backend("across_imports", |db| async move {
        // One import per file: the parent arrives in a later import than its replies
        // (linked by In-Reply-To), the References-only reply last.
        for name in [
            "refund-3.eml",
            "refund-2.eml",
            "refund-1.eml",
            "refund-4.eml",
        ] {
            import(&db, &[file(name)]).await;
        }
        assert_eq!(sorted(threads(&db).await), refund_thread());
    })
    .await;
}

#[tokio::test]
async fn every_import_order_gives_the_same_thread() {
    // All 24 orders of the four messages in one import (SQLite).
    let mut orders = vec![vec![0usize, 1, 2, 3]];
    // Heap's algorithm, iteratively.
    let mut a = [0usize, 1, 2, 3];
    let mut c = [0usize; 4];
    let mut i = 0;
    while i < 4 {
        if c[i] < i {
            if i % 2 == 0 {
                a.swap(0, i);
            } else {
                a.swap(c[i], i);
            }
            orders.push(a.to_vec());
            c[i] += 1;
            i = 0;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
    assert_eq!(orders.len(), 24);
    for order in orders {
        let db = db::open("sqlite::memory:").await.unwrap();
        let paths: Vec<PathBuf> = order.iter().map(|&k| file(REFUND[k])).collect();
        import(&db, &paths).await;
        assert_eq!(
            sorted(threads(&db).await),
            refund_thread(),
            "order {order:?}"
        );
    }
}

#[tokio::test]
async fn an_imported_thread_replays_through_thread_history() {
    on_each_backend("end_to_end", |db| async move {
        let paths: Vec<PathBuf> = [3, 1, 0, 2].iter().map(|&k| file(REFUND[k])).collect();
        import(&db, &paths).await;
        let current = db::load_message(&db, "<refund-4@example.com>")
            .await
            .unwrap()
            .expect("stored");
        let mut persona = PersonaInfo::new("support");
        persona.addresses = vec!["support@acme.test".into()];
        let ctx = Context::builder(
            persona,
            AppConfig::new("."),
            Trigger::Message(current.into()),
        )
        .now("2026-07-01T12:00:00Z".parse().unwrap())
        .db(db.clone())
        .build();
        let chain = DynChain::new().with(ThreadHistory::new());
        let messages = chain.resolve(&ctx).await.expect("resolve");
        assert_eq!(
            serde_json::to_value(&messages).unwrap(),
            json!([
                {"role": "user", "content": "From: Alice Martin <alice@example.com>\nTo: support@acme.test\nCc:\nDate: Mon, 2 Feb 2026 09:00:00 +0000\nSubject: Refund for order A-1\n\nPlease refund order A-1."},
                {"role": "assistant", "content": "From: Acme Support <support@acme.test>\nTo: Alice Martin <alice@example.com>\nCc:\nDate: Mon, 2 Feb 2026 10:00:00 +0000\nSubject: Re: Refund for order A-1\n\nCan you send a photo of the damage?"},
                {"role": "user", "content": "From: Alice Martin <alice@example.com>\nTo: Acme Support <support@acme.test>\nCc:\nDate: Mon, 2 Feb 2026 11:00:00 +0000\nSubject: RE: Re: Refund for order A-1\n\nHere it is.\n\nAttachments:\n- damage.png (image/png, 32 bytes, id: att-3c4cecbd1efe9a4e2eea5126)"},
            ])
        );
    })
    .await;
}

#[tokio::test]
async fn summary_display_pluralises() {
    let summary = EmlSummary {
        imported: 1,
        duplicates: 1,
        erased: 0,
        failed: vec![],
        warnings: vec!["a.eml: no `Message-ID` header, using `<x@protege.invalid>`".into()],
        stored: vec![],
    };
    assert_eq!(
        summary.to_string(),
        "warning: a.eml: no `Message-ID` header, using `<x@protege.invalid>`\n\
         imported 1 message, skipped 1 duplicate, 0 failed"
    );
}

#[tokio::test]
async fn directories_are_searched_for_eml_and_mbox_files() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("2026").join("feb");
    std::fs::create_dir_all(&sub).unwrap();
    // An mbox without extension is recognised by its first line; other files are skipped.
    std::fs::copy(file("archive.mbox"), dir.path().join("inbox")).unwrap();
    std::fs::copy(file("refund-1.eml"), sub.join("refund-1.EML")).unwrap();
    std::fs::copy(file("refund-2.eml"), dir.path().join(".hidden.eml")).unwrap();
    std::fs::write(
        dir.path().join("notes.txt"),
        "From: not@mail.test\n\nhello\n",
    )
    .unwrap();
    let db = db::open("sqlite::memory:").await.unwrap();
    let summary = import(&db, &[dir.path().to_owned()]).await;
    assert_eq!(
        summary.to_string(),
        format!(
            "failed: {}#5: not an email: no header found\n\
             imported 5 messages, skipped 0 duplicates, 1 failed",
            dir.path().join("inbox").display()
        )
    );
    assert_eq!(
        stored(&db, "<refund-1@example.com>").await["thread"],
        json!("Refund for order A-1")
    );
}

#[tokio::test]
async fn messages_without_sender_or_with_an_oversized_id_fail_alone() {
    let dir = tempfile::tempdir().unwrap();
    let no_from = dir.path().join("no-from.eml");
    std::fs::write(
        &no_from,
        "To: support@acme.test\nSubject: Who am I\nMessage-ID: <nofrom@example.com>\n\nHi\n",
    )
    .unwrap();
    let long_id = dir.path().join("long-id.eml");
    std::fs::write(
        &long_id,
        format!(
            "From: a@example.com\nSubject: Long\nMessage-ID: <{}@example.com>\n\nHi\n",
            "x".repeat(600)
        ),
    )
    .unwrap();
    let db = db::open("sqlite::memory:").await.unwrap();
    let summary = import(&db, &[no_from.clone(), long_id.clone(), file("plain.eml")]).await;
    assert_eq!(
        summary.failed,
        vec![
            failure(no_from.display().to_string(), "no `From` address"),
            failure(
                long_id.display().to_string(),
                "`Message-ID` longer than 512 characters"
            ),
        ]
    );
    assert_eq!(summary.imported, 1);
}

#[tokio::test]
async fn a_large_mbox_is_committed_in_batches_on_a_file_database() {
    // More messages than one batch, on a SQLite file (a single-connection pool).
    let dir = tempfile::tempdir().unwrap();
    let mbox = dir.path().join("big.mbox");
    let mut text = String::new();
    for i in 0..600 {
        let (t, k) = (i / 3, i % 3);
        text.push_str(&format!(
            "From x Mon Jan  5 10:00:00 2026\nFrom: c{t}@example.com\nTo: support@acme.test\n\
             Date: Mon, 5 Jan 2026 10:{:02}:00 +0000\nSubject: Order {t}\nMessage-ID: <b{t}-{k}@example.com>\n",
            i % 60
        ));
        if k > 0 {
            text.push_str(&format!("In-Reply-To: <b{t}-{}@example.com>\n", k - 1));
        }
        text.push_str("\nBody.\n\n");
    }
    std::fs::write(&mbox, text).unwrap();
    let url = format!("sqlite://{}", dir.path().join("big.db").display());
    let db = db::open(&url).await.unwrap();
    let summary = import(&db, std::slice::from_ref(&mbox)).await;
    assert_eq!(
        summary.to_string(),
        "imported 600 messages, skipped 0 duplicates, 0 failed"
    );
    assert_eq!(email_thread::Entity::find().count(&db).await.unwrap(), 200);
    assert_eq!(
        stored(&db, "<b199-2@example.com>").await["thread"],
        json!("Order 199")
    );
    let again = import(&db, &[mbox]).await;
    assert_eq!(
        again.to_string(),
        "imported 0 messages, skipped 600 duplicates, 0 failed"
    );
}
