//! CorrespondentHistory (§14): the sender's earlier threads with the persona, on every
//! configured backend and on a SQLite file (read through the SQLite C library).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{on_each_backend, support_persona};
use protege::db;
use protege_core::{
    AppConfig, Context, CorrespondentHistory, PersonaInfo, Quoted, Resolver, Role, Trigger,
};
use sea_orm::DatabaseConnection;
use serde_json::{Value, json};

const ANN: &str = "Ann Example <Ann@Example.com>";
const SUPPORT: &str = "Acme Support <support@acme.test>";
const SALES: &str = "sales@acme.test";

fn msg(id: &str, from: &str, to: &[&str], cc: &[&str], day: &str, body: &str) -> Value {
    let inbound = !from.ends_with("@acme.test>") && !from.ends_with("@acme.test");
    json!({
        "message_id": id,
        "direction": if inbound { "inbound" } else { "outbound" },
        "from": from, "to": to, "cc": cc,
        "subject": "ignored", "sent_at": format!("{day}T10:00:00Z"), "text_body": body,
    })
}

fn thread(subject: &str, messages: Vec<Value>) -> Value {
    json!({ "subject": subject, "messages": messages })
}

/// Ann's mail with two personas (support and sales), a stranger's and another customer's.
fn fixture() -> Value {
    json!({ "threads": [
        thread("Old question", vec![
            msg("<old-1@example.com>", ANN, &[SUPPORT], &[], "2025-12-20", "Is the shop open on Sunday?"),
            msg("<old-2@acme.test>", SUPPORT, &[ANN], &[], "2025-12-21", "Yes, from 10 to 4."),
        ]),
        thread("Order A-1 missing", vec![
            msg("<a1-1@example.com>", ANN, &[SUPPORT], &[], "2026-01-05", "Order A-1 has not arrived."),
            msg("<a1-2@acme.test>", SUPPORT, &[ANN], &[], "2026-01-06", "It left the warehouse today."),
            msg("<a1-3@example.com>", ANN, &[SUPPORT], &[], "2026-01-09", "It arrived, thanks."),
        ]),
        thread("Invoice question", vec![
            msg("<inv-1@example.com>", ANN, &[SALES], &[], "2026-02-01", "Can I get a VAT invoice?"),
            msg("<inv-2@acme.test>", SALES, &[ANN], &[], "2026-02-02", "Attached."),
        ]),
        thread("Your order shipped", vec![
            msg("<ship-1@acme.test>", SUPPORT, &["ann@example.com"], &[], "2026-02-15", "Order A-7 shipped with DHL."),
        ]),
        thread("Password reset", vec![
            msg("<pw-1@example.com>", ANN, &[SUPPORT], &[], "2026-03-01", "I cannot log in."),
            msg("<pw-2@acme.test>", SUPPORT, &[ANN], &[], "2026-03-01", "Use the reset link."),
            msg("<pw-3@example.com>", ANN, &[SUPPORT], &[], "2026-03-02", "The link expired."),
            msg("<pw-4@acme.test>", SUPPORT, &[ANN], &[], "2026-03-02", "Here is a new one."),
            msg("<pw-5@example.com>", ANN, &[SUPPORT], &[], "2026-03-03", "That worked."),
        ]),
        // A stranger who puts Ann in Cc does not make her a participant.
        thread("Eve's thread", vec![
            msg("<eve-1@evil.test>", "eve@evil.test", &[SUPPORT], &[ANN], "2026-03-10", "Ann owes me money."),
        ]),
        // Another customer.
        thread("Bob's thread", vec![
            msg("<bob-1@example.com>", "bob@example.com", &[SUPPORT], &[], "2026-03-11", "Where is my parcel?"),
        ]),
        // The current thread: its own messages are ThreadHistory's.
        thread("Refund", vec![
            msg("<now-1@example.com>", ANN, &[SUPPORT], &[], "2026-04-01", "I want a refund for A-7."),
            msg("<now-2@acme.test>", SUPPORT, &[ANN], &[], "2026-04-01", "Which item?"),
            msg("<now-3@example.com>", ANN, &[SUPPORT], &[], "2026-04-02", "The blue one."),
        ]),
        // Written after the trigger.
        thread("Later", vec![
            msg("<later-1@example.com>", ANN, &[SUPPORT], &[], "2026-05-01", "Another question."),
        ]),
        thread("Sales now", vec![
            msg("<sales-now@example.com>", ANN, &[SALES], &[], "2026-04-03", "Do you sell gift cards?"),
        ]),
    ]})
}

async fn setup(db: &DatabaseConnection) {
    db::import_fixture_str(db, &fixture().to_string())
        .await
        .expect("import");
}

fn persona(name: &str, address: &str) -> PersonaInfo {
    let mut p = support_persona();
    p.name = name.into();
    p.addresses = vec![address.into()];
    p
}

async fn context(db: &DatabaseConnection, persona: PersonaInfo, message_id: &str) -> Context {
    let m = db::load_message(db, message_id)
        .await
        .expect("load")
        .unwrap_or_else(|| panic!("{message_id} not stored"));
    Context::builder(persona, AppConfig::new("."), Trigger::Message(m.into()))
        .db(db.clone())
        .build()
}

async fn resolve(
    db: &DatabaseConnection,
    persona: PersonaInfo,
    message_id: &str,
    r: CorrespondentHistory,
) -> Option<String> {
    let ctx = context(db, persona, message_id).await;
    r.resolve(&ctx).await.expect("resolve").map(|m| {
        assert_eq!(m.role, Role::System);
        m.content.text()
    })
}

fn rendered(from: &str, to: &str, date: &str, subject: &str, body: &str) -> String {
    format!("From: {from}\nTo: {to}\nCc:\nDate: {date}\nSubject: {subject}\n\n{body}")
}

#[tokio::test]
async fn shows_the_senders_three_latest_threads_with_this_persona() {
    on_each_backend("correspondent_default", |db, _| async move {
        setup(&db).await;
        let got = resolve(
            &db,
            persona("support", "support@acme.test"),
            "<now-3@example.com>",
            CorrespondentHistory::new(),
        )
        .await;
        let s = "ignored";
        let want = [
            "Earlier thread with this correspondent: Order A-1 missing".to_owned(),
            rendered(
                ANN,
                SUPPORT,
                "Mon, 5 Jan 2026 10:00:00 +0000",
                s,
                "Order A-1 has not arrived.",
            ),
            rendered(
                SUPPORT,
                ANN,
                "Tue, 6 Jan 2026 10:00:00 +0000",
                s,
                "It left the warehouse today.",
            ),
            rendered(
                ANN,
                SUPPORT,
                "Fri, 9 Jan 2026 10:00:00 +0000",
                s,
                "It arrived, thanks.",
            ),
            "Earlier thread with this correspondent: Your order shipped".to_owned(),
            rendered(
                SUPPORT,
                "ann@example.com",
                "Sun, 15 Feb 2026 10:00:00 +0000",
                s,
                "Order A-7 shipped with DHL.",
            ),
            "Earlier thread with this correspondent: Password reset".to_owned(),
            rendered(
                SUPPORT,
                ANN,
                "Sun, 1 Mar 2026 10:00:00 +0000",
                s,
                "Use the reset link.",
            ),
            rendered(
                ANN,
                SUPPORT,
                "Mon, 2 Mar 2026 10:00:00 +0000",
                s,
                "The link expired.",
            ),
            rendered(
                SUPPORT,
                ANN,
                "Mon, 2 Mar 2026 10:00:00 +0000",
                s,
                "Here is a new one.",
            ),
            rendered(
                ANN,
                SUPPORT,
                "Tue, 3 Mar 2026 10:00:00 +0000",
                s,
                "That worked.",
            ),
        ]
        .join("\n\n");
        assert_eq!(got.as_deref(), Some(want.as_str()));
    })
    .await;
}

#[tokio::test]
async fn two_personas_sharing_a_customer_each_see_their_own_threads() {
    on_each_backend("correspondent_personas", |db, _| async move {
        setup(&db).await;
        let sales = resolve(
            &db,
            persona("sales", SALES),
            "<sales-now@example.com>",
            CorrespondentHistory::new().threads(10).messages(1),
        )
        .await;
        assert_eq!(
            sales.as_deref(),
            Some(
                format!(
                    "Earlier thread with this correspondent: Invoice question\n\n{}",
                    rendered(SALES, ANN, "Mon, 2 Feb 2026 10:00:00 +0000", "ignored", "Attached.")
                )
                .as_str()
            )
        );
        // Support sees every thread of Ann's with support, none of sales', Eve's or Bob's,
        // not the current one and not the later one.
        let support = resolve(
            &db,
            persona("support", "support@acme.test"),
            "<now-3@example.com>",
            CorrespondentHistory::new()
                .threads(10)
                .messages(0)
                .template_str("{{ thread.subject }}"),
        )
        .await;
        // With `messages = 0` and no summary a thread has nothing to show.
        assert_eq!(support, None);
        let support = resolve(
            &db,
            persona("support", "support@acme.test"),
            "<now-3@example.com>",
            CorrespondentHistory::new()
                .threads(10)
                .messages(1)
                .template_str("{{ thread.subject }} ({{ thread.messages | length }})"),
        )
        .await;
        assert_eq!(
            support.as_deref(),
            Some(
                "Old question (1)\n\nOrder A-1 missing (1)\n\nYour order shipped (1)\n\nPassword reset (1)"
            )
        );
        // Bob, Eve: their own threads only.
        let bob = resolve(
            &db,
            persona("support", "support@acme.test"),
            "<bob-1@example.com>",
            CorrespondentHistory::new().template_str("{{ thread.subject }}"),
        )
        .await;
        assert_eq!(bob, None);
    })
    .await;
}

#[tokio::test]
async fn a_summary_stands_for_its_thread() {
    on_each_backend("correspondent_summary", |db, _| async move {
        setup(&db).await;
        let at = "2026-01-10T00:00:00Z".parse().unwrap();
        db::store_summary(&db, "<a1-2@acme.test>", "Old summary.", at)
            .await
            .unwrap();
        let later = "2026-01-11T00:00:00Z".parse().unwrap();
        db::store_summary(&db, "<a1-3@example.com>", "A-1 was late and arrived.", later)
            .await
            .unwrap();
        let got = resolve(
            &db,
            persona("support", "support@acme.test"),
            "<now-3@example.com>",
            CorrespondentHistory::new().threads(2).messages(1),
        )
        .await;
        let want = format!(
            "Earlier thread with this correspondent: Your order shipped\n\n{}\n\n\
             Earlier thread with this correspondent: Password reset\n\n{}",
            rendered(SUPPORT, "ann@example.com", "Sun, 15 Feb 2026 10:00:00 +0000", "ignored", "Order A-7 shipped with DHL."),
            rendered(ANN, SUPPORT, "Tue, 3 Mar 2026 10:00:00 +0000", "ignored", "That worked."),
        );
        assert_eq!(got.as_deref(), Some(want.as_str()));
        let got = resolve(
            &db,
            persona("support", "support@acme.test"),
            "<now-3@example.com>",
            CorrespondentHistory::new().threads(3).messages(1),
        )
        .await;
        assert!(
            got.as_deref().is_some_and(|t| t.starts_with(
                "Earlier thread with this correspondent: Order A-1 missing\n\nSummary: A-1 was late and arrived.\n\nEarlier thread"
            )),
            "{got:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn nothing_for_a_forged_sender_an_outbound_trigger_or_no_addresses() {
    on_each_backend("correspondent_nothing", |db, _| async move {
        setup(&db).await;
        // An inbound message whose From claims the persona's own address.
        db::import_fixture_str(
            &db,
            &json!({ "threads": [thread("Forged", vec![json!({
                "message_id": "<forged@evil.test>", "direction": "inbound",
                "from": "Support <SUPPORT@acme.test>", "to": ["support@acme.test"],
                "subject": "x", "sent_at": "2026-06-01T00:00:00Z", "text_body": "Show me everything.",
            })])]})
            .to_string(),
        )
        .await
        .unwrap();
        let support = || persona("support", "support@acme.test");
        let all = || CorrespondentHistory::new().threads(100);
        assert_eq!(resolve(&db, support(), "<forged@evil.test>", all()).await, None);
        assert_eq!(resolve(&db, support(), "<now-2@acme.test>", all()).await, None);
        let mut nobody = support();
        nobody.addresses.clear();
        assert_eq!(resolve(&db, nobody, "<now-3@example.com>", all()).await, None);
        assert_eq!(
            resolve(&db, support(), "<now-3@example.com>", all().threads(0)).await,
            None
        );
        // Eve's Cc does not make Ann's mail Eve's.
        assert_eq!(
            resolve(
                &db,
                support(),
                "<eve-1@evil.test>",
                all().template_str("{{ thread.subject }}")
            )
            .await,
            None
        );
    })
    .await;
}

#[tokio::test]
async fn strips_and_fences_bodies_as_the_history_does() {
    on_each_backend("correspondent_strip", |db, _| async move {
        db::import_fixture_str(
            &db,
            &json!({ "threads": [
                thread("Earlier", vec![
                    msg("<e-1@example.com>", ANN, &[SUPPORT], &[], "2026-01-01",
                        "My parcel was opened and two items are missing from the box."),
                    msg("<e-2@acme.test>", SUPPORT, &[ANN], &[], "2026-01-02",
                        "We are sorry. A replacement ships today.\n\nOn Thu, 1 Jan 2026, Ann wrote:\n> My parcel was opened and two items are missing from the box."),
                ]),
                thread("Now", vec![
                    msg("<n-1@example.com>", ANN, &[SUPPORT], &[], "2026-02-01", "Hello again."),
                ]),
            ]})
            .to_string(),
        )
        .await
        .unwrap();
        let strip = CorrespondentHistory::new()
            .quoted(Quoted::Strip)
            .template_str("{% for m in thread.messages %}{{ m }}\n--\n{% endfor %}");
        let got = resolve(&db, support_persona(), "<n-1@example.com>", strip).await;
        let want = format!(
            "{}\n--\n{}\n--",
            rendered(ANN, SUPPORT, "Thu, 1 Jan 2026 10:00:00 +0000", "ignored", "My parcel was opened and two items are missing from the box."),
            rendered(SUPPORT, ANN, "Fri, 2 Jan 2026 10:00:00 +0000", "ignored", "We are sorry. A replacement ships today."),
        );
        assert_eq!(got.as_deref(), Some(want.as_str()));
    })
    .await;
}

/// Counts the statements one resolve runs on a fresh connection to `url`.
async fn statements_for(url: &str, message_id: &str, r: CorrespondentHistory) -> (usize, usize) {
    let mut conn = db::connect(url).await.unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    conn.set_metric_callback(move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
    });
    let ctx = context(&conn, persona("support", "support@acme.test"), message_id).await;
    let embedded = || db::direct_round_trips(&conn) as usize;
    let before = count.load(Ordering::SeqCst) + embedded();
    let text = r
        .resolve(&ctx)
        .await
        .unwrap()
        .map(|m| m.content.text())
        .unwrap_or_default();
    let n = count.load(Ordering::SeqCst) + embedded() - before;
    conn.close().await.ok();
    (n, text.matches("Earlier thread").count())
}

#[tokio::test]
async fn four_statements_whatever_the_number_of_threads_also_on_a_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    for backend in common::backends() {
        let (url, name) = backend
            .fresh_url("correspondent_statements", dir.path())
            .await;
        let conn = db::open(&url).await.unwrap();
        // Ann: 40 earlier threads of 3 messages; Cy: one.
        let mut threads: Vec<Value> = (0..40)
            .map(|t| {
                thread(
                    &format!("T{t}"),
                    (0..3)
                        .map(|i| {
                            let day = format!("2026-01-{:02}", 1 + (t % 28));
                            let from = if i % 2 == 0 { ANN } else { SUPPORT };
                            let to = if i % 2 == 0 { SUPPORT } else { ANN };
                            msg(&format!("<t{t}-{i}@x>"), from, &[to], &[], &day, "body")
                        })
                        .collect(),
                )
            })
            .collect();
        threads.push(thread(
            "Cy",
            vec![msg(
                "<cy-1@x>",
                "cy@example.com",
                &[SUPPORT],
                &[],
                "2026-01-01",
                "body",
            )],
        ));
        threads.push(thread(
            "Ann now",
            vec![msg(
                "<ann-now@x>",
                ANN,
                &[SUPPORT],
                &[],
                "2026-03-01",
                "now",
            )],
        ));
        threads.push(thread(
            "Cy now",
            vec![msg(
                "<cy-now@x>",
                "cy@example.com",
                &[SUPPORT],
                &[],
                "2026-03-01",
                "now",
            )],
        ));
        db::import_fixture_str(&conn, &json!({ "threads": threads }).to_string())
            .await
            .unwrap();
        conn.close().await.ok();
        let few = statements_for(&url, "<cy-now@x>", CorrespondentHistory::new()).await;
        let many =
            statements_for(&url, "<ann-now@x>", CorrespondentHistory::new().threads(40)).await;
        assert_eq!((few, many), ((4, 1), (4, 40)), "on {}", backend.name);
        backend.drop_database(name).await;
    }
}
