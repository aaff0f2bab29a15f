//! `import_eml_paths` stores mail in batches: the rows it writes are the rows storing the
//! same messages one at a time writes (`ingest_eml`), ids included, and a message another
//! writer stores while a batch is being written is counted once — on every configured
//! backend.

#[path = "../../protege-core/tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use protege::db::entities::{attachment, email_thread, message, message_address};
use protege::db::{self, EmlOptions, import_eml_paths, ingest_eml};
use sea_orm::{
    ActiveValue::{NotSet, Set},
    DatabaseConnection, EntityTrait, QueryOrder, TransactionTrait,
};

const NOW: &str = "2026-07-01T12:00:00Z";

/// Threads of the corpus, seven messages each: more than two batches.
const THREADS: usize = 100;

/// Messages of a thread.
const THREAD_LEN: usize = 7;

fn options() -> EmlOptions {
    EmlOptions::new(
        vec!["Acme Support <support@acme.test>".into()],
        NOW.parse().unwrap(),
    )
}

/// Message `k` of thread `t` as RFC 5322 text, with the date an import sorts it by.
///
/// Customers write to support and support answers; message 5 comes from a stranger who
/// is no participant (a thread of its own); in every third thread the persona's message 1
/// copies a colleague, who writes message 3. Every fifth thread is dated backwards (replies older
/// than what they answer); threads overlap in time. Some messages have attachments, an
/// HTML body, no In-Reply-To (References only), no Message-ID or no Date.
fn message(t: usize, k: usize) -> (String, DateTime<Utc>) {
    let base: DateTime<Utc> = "2026-01-05T08:00:00Z".parse().unwrap();
    let step = if t % 5 == 1 { THREAD_LEN - 1 - k } else { k };
    let mut sent_at = base + chrono::Duration::minutes((t * 3 + step * 2) as i64);
    let customer = format!("Customer {t} <C{t}@Example.com>");
    let colleague = format!("colleague{t}@example.com");
    let support = "Acme Support <support@acme.test>".to_owned();
    let (from, to, cc) = match k {
        5 => (format!("stranger{t}@evil.test"), support.clone(), None),
        3 if t.is_multiple_of(3) => (colleague.clone(), support.clone(), None),
        1 if t.is_multiple_of(3) => (support.clone(), customer.clone(), Some(colleague.clone())),
        k if k % 2 == 1 => (support.clone(), customer.clone(), None),
        _ => (customer.clone(), "support@acme.test".to_owned(), None),
    };
    let mut text = format!("From: {from}\nTo: {to}\n");
    if let Some(cc) = cc {
        text.push_str(&format!("Cc: {cc}\n"));
    }
    let re = if k == 0 { "" } else { "Re: " };
    text.push_str(&format!("Subject: {re}Order {t}\n"));
    if !(t % 11 == 4 && k == 6) {
        text.push_str(&format!("Message-ID: <t{t}-k{k}@corpus.test>\n"));
    }
    if t % 13 == 5 && k == 4 {
        sent_at = NOW.parse().unwrap();
    } else {
        text.push_str(&format!("Date: {}\n", sent_at.to_rfc2822()));
    }
    if k > 0 {
        let refs: Vec<String> = (0..k).map(|j| format!("<t{t}-k{j}@corpus.test>")).collect();
        text.push_str(&format!("References: {}\n", refs.join(" ")));
        if t % 4 != 2 {
            text.push_str(&format!("In-Reply-To: <t{t}-k{}@corpus.test>\n", k - 1));
        }
    }
    let body = format!("Message {k} about order {t}.\nFrom what I see, it is late.");
    let attachments: Vec<(String, &str, String)> = match k {
        1 => vec![(format!("label-{t}.txt"), "text/plain", format!("label {t}"))],
        2 if t.is_multiple_of(6) => vec![
            (
                format!("photo-{t}.bin"),
                "application/octet-stream",
                "x".repeat(t + 10),
            ),
            (String::new(), "image/png", format!("png {t}")),
        ],
        _ => Vec::new(),
    };
    if t % 7 == 3 && k == 0 {
        text.push_str(&format!(
            "MIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=\"A\"\n\n--A\n\
             Content-Type: text/plain\n\n{body}\n--A\nContent-Type: text/html\n\n\
             <p>Message {k} about <b>order {t}</b>.</p>\n--A--\n"
        ));
    } else if attachments.is_empty() {
        text.push_str(&format!("\n{body}\n"));
    } else {
        text.push_str(&format!(
            "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n--B\n\
             Content-Type: text/plain\n\n{body}\n"
        ));
        for (name, content_type, data) in attachments {
            let disposition = if name.is_empty() {
                "attachment".to_owned()
            } else {
                format!("attachment; filename=\"{name}\"")
            };
            text.push_str(&format!(
                "--B\nContent-Type: {content_type}\nContent-Disposition: {disposition}\n\n{data}\n"
            ));
        }
        text.push_str("--B--\n");
    }
    (text, sent_at)
}

/// Writes `messages` as an mbox at `path`.
fn write_mbox(path: &Path, messages: &[(String, DateTime<Utc>)]) {
    let mut text = String::new();
    for (raw, _) in messages {
        text.push_str("From x@y Mon Jan  5 10:00:00 2026\n");
        for line in raw.lines() {
            if line.starts_with("From ") {
                text.push('>');
            }
            text.push_str(line);
            text.push('\n');
        }
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

/// The two imports of the comparison: the replies of the even threads first (threads
/// that start with a reply), then every message, with a second copy of every fiftieth.
fn imports() -> [Vec<(String, DateTime<Utc>)>; 2] {
    let first = (0..THREADS)
        .step_by(2)
        .flat_map(|t| (1..THREAD_LEN).map(move |k| message(t, k)))
        .collect();
    let mut second: Vec<(String, DateTime<Utc>)> = (0..THREADS)
        .flat_map(|t| (0..THREAD_LEN).map(move |k| message(t, k)))
        .collect();
    let copies: Vec<_> = second.iter().step_by(50).cloned().collect();
    second.extend(copies);
    [first, second]
}

/// Every row of the mail tables, in id order.
async fn rows(
    db: &DatabaseConnection,
) -> (
    Vec<email_thread::Model>,
    Vec<message::Model>,
    Vec<attachment::Model>,
) {
    (
        email_thread::Entity::find()
            .order_by_asc(email_thread::Column::Id)
            .all(db)
            .await
            .unwrap(),
        message::Entity::find()
            .order_by_asc(message::Column::Id)
            .all(db)
            .await
            .unwrap(),
        attachment::Entity::find()
            .order_by_asc(attachment::Column::Id)
            .all(db)
            .await
            .unwrap(),
    )
}

#[tokio::test]
async fn a_batched_import_stores_the_rows_of_one_message_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let [first, second] = imports();
    let paths = [
        dir.path().join("first.mbox"),
        dir.path().join("second.mbox"),
    ];
    write_mbox(&paths[0], &first);
    write_mbox(&paths[1], &second);
    for backend in common::backends() {
        // In batches: two imports.
        let (batched, batched_name) = backend.create("eml_batches_batched").await;
        let one = import_eml_paths(&batched, &paths[..1], &options())
            .await
            .unwrap();
        let two = import_eml_paths(&batched, &paths[1..], &options())
            .await
            .unwrap();

        // One at a time, in the order an import stores them: by date, then file order.
        let (single, single_name) = backend.create("eml_batches_single").await;
        let mut counts = Vec::new();
        for import in [&first, &second] {
            let mut order: Vec<usize> = (0..import.len()).collect();
            order.sort_by_key(|&i| (import[i].1, i));
            let mut imported = 0;
            for i in order {
                let ingested = ingest_eml(&single, import[i].0.as_bytes(), &options())
                    .await
                    .unwrap();
                imported += usize::from(ingested.imported);
            }
            counts.push((imported, import.len() - imported));
        }

        let got = (rows(&batched).await, rows(&single).await);
        let threads_of = |ids: &[&str]| -> Vec<i64> {
            ids.iter()
                .map(|id| {
                    got.0
                        .1
                        .iter()
                        .find(|m| m.message_id == *id)
                        .unwrap_or_else(|| panic!("{id}"))
                        .email_thread_id
                })
                .collect()
        };
        // Thread 0 starts with a reply in the first import; its first message, imported
        // second, joins it and gives it its subject and start. The stranger is alone.
        let t0 = threads_of(&[
            "<t0-k1@corpus.test>",
            "<t0-k0@corpus.test>",
            "<t0-k3@corpus.test>",
            "<t0-k6@corpus.test>",
        ]);
        let stranger = threads_of(&["<t0-k5@corpus.test>"])[0];
        let thread0 = got.0.0.iter().find(|t| t.id == t0[0]).unwrap().clone();
        let outcome = (
            one.to_string().lines().last().map(str::to_owned),
            two.to_string().lines().last().map(str::to_owned),
            counts,
            t0.iter().all(|&t| t == t0[0]),
            stranger != t0[0],
            thread0.subject,
            protege_core::rfc3339_z(&thread0.created_at),
            got.0.1.len(),
            got.0.2.len(),
        );
        let same = got.0 == got.1;
        batched.close().await.ok();
        single.close().await.ok();
        backend.drop_database(batched_name).await;
        backend.drop_database(single_name).await;
        assert_eq!(
            outcome,
            (
                Some("imported 300 messages, skipped 0 duplicates, 0 failed".to_owned()),
                Some("imported 400 messages, skipped 314 duplicates, 0 failed".to_owned()),
                vec![(300, 0), (400, 314)],
                true,
                true,
                "Order 0".to_owned(),
                "2026-01-05T08:00:00Z".to_owned(),
                THREADS * THREAD_LEN,
                // One attachment in every thread, two more in every sixth (0, 6, ..., 96).
                THREADS + 17 * 2,
            ),
            "backend {}",
            backend.name
        );
        assert!(same, "backend {}: batched rows differ", backend.name);
    }
}

#[tokio::test]
async fn a_message_another_writer_stores_meanwhile_is_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let mbox = dir.path().join("meanwhile.mbox");
    let mail = |k: usize, from: &str, to: &str| {
        let mut text = format!(
            "From: {from}\nTo: {to}\nSubject: Parcel\nMessage-ID: <m{k}@example.com>\n\
             Date: Mon, 5 Jan 2026 10:0{k}:00 +0000\n"
        );
        if k > 1 {
            text.push_str(&format!("In-Reply-To: <m{}@example.com>\n", k - 1));
        }
        text.push_str("\nWhere is it?\n");
        (text, DateTime::<Utc>::MIN_UTC)
    };
    write_mbox(
        &mbox,
        &[
            mail(1, "alice@example.com", "support@acme.test"),
            mail(2, "support@acme.test", "alice@example.com"),
            mail(3, "alice@example.com", "support@acme.test"),
        ],
    );
    for backend in common::backends() {
        let (url, name) = backend.fresh_url("eml_batches_meanwhile", dir.path()).await;
        let db = db::open(&url).await.unwrap();
        let other = db::connect(&url).await.unwrap();
        // Another writer stores message 2, the same message (in a thread of its own), and
        // commits it while the import runs.
        let txn = other.begin().await.unwrap();
        let sent_at: DateTime<Utc> = "2026-01-05T10:02:00Z".parse().unwrap();
        let thread = email_thread::Entity::insert(email_thread::ActiveModel {
            id: NotSet,
            subject: Set("Parcel".into()),
            created_at: Set(sent_at),
        })
        .exec(&txn)
        .await
        .unwrap()
        .last_insert_id;
        let m2 = message::Entity::insert(message::ActiveModel {
            id: NotSet,
            email_thread_id: Set(thread),
            message_id: Set("<m2@example.com>".into()),
            direction: Set("outbound".into()),
            from_address: Set("support@acme.test".into()),
            to_addresses: Set("[\"alice@example.com\"]".into()),
            cc_addresses: Set("[]".into()),
            subject: Set("Parcel".into()),
            text_body: Set(Some("Where is it?\n".into())),
            html_body: Set(None),
            html_text: Set(None),
            in_reply_to: Set(None),
            sent_at: Set(sent_at),
            reply_headers: Set(None),
        })
        .exec(&txn)
        .await
        .unwrap()
        .last_insert_id;
        // Its address rows, as every writer of the one write path stores them: the From,
        // and the To of an outbound message, are participants.
        for address in ["support@acme.test", "alice@example.com"] {
            message_address::Entity::insert(message_address::ActiveModel {
                id: NotSet,
                message_id: Set(m2),
                email_thread_id: Set(thread),
                address: Set(address.into()),
                participant: Set(true),
            })
            .exec(&txn)
            .await
            .unwrap();
        }
        let (paths, options) = ([mbox.clone()], options());
        let (summary, ()) = tokio::join!(import_eml_paths(&db, &paths, &options), async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            txn.commit().await.unwrap();
        });
        let (threads, messages, _) = rows(&db).await;
        let outcome = (
            summary
                .map(|s| s.to_string())
                .unwrap_or_else(|e| e.to_string()),
            threads.len(),
            messages
                .iter()
                .map(|m| {
                    (
                        m.message_id.clone(),
                        m.email_thread_id == thread,
                        m.text_body.clone().unwrap_or_default(),
                    )
                })
                .collect::<Vec<_>>(),
        );
        db.close().await.ok();
        other.close().await.ok();
        backend.drop_database(name).await;
        // Message 1 starts a thread; message 2 is the other writer's; message 3, a reply
        // to message 2 from one of its participants, joins the other writer's thread.
        let mut expected = vec![
            (
                "<m2@example.com>".to_owned(),
                true,
                "Where is it?\n".to_owned(),
            ),
            (
                "<m1@example.com>".to_owned(),
                false,
                "Where is it?\n".to_owned(),
            ),
            (
                "<m3@example.com>".to_owned(),
                true,
                "Where is it?\n".to_owned(),
            ),
        ];
        let mut got_messages = outcome.2.clone();
        expected.sort();
        got_messages.sort();
        assert_eq!(
            (outcome.0.as_str(), outcome.1, got_messages),
            (
                "imported 2 messages, skipped 1 duplicate, 0 failed",
                2,
                expected
            ),
            "backend {}",
            backend.name
        );
    }
}
