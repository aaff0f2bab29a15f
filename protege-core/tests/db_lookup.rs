//! Finding stored mail: a message by its Message-ID (`load_message`) and the messages of its
//! thread, oldest first (`thread_messages`), on every configured backend.

mod common;

use common::on_each_backend;
use protege::db;
use protege_core::{Direction, MailMessage};
use serde_json::json;

/// Two threads. The first is stored out of order and has two messages sent at the same
/// second; attachments (with and without data) sit on two of its messages.
fn fixture() -> String {
    json!({"threads": [
        {"subject": "Refund", "messages": [
            {"message_id": "<r3@x>", "direction": "inbound", "from": "Alice <alice@x>",
             "to": ["support@x"], "subject": "Re: Refund", "sent_at": "2026-01-05T12:00:00Z",
             "text_body": "Here is the photo.", "in_reply_to": "<r2@x>",
             "attachments": [
                {"id": "att-photo", "filename": "photo.jpg", "content_type": "image/jpeg",
                 "byte_size": 3, "data_base64": "/9j/"},
                {"id": "att-note", "filename": "note.txt", "content_type": "text/plain",
                 "byte_size": 40}]},
            {"message_id": "<r1@x>", "direction": "inbound", "from": "Alice <alice@x>",
             "to": ["support@x"], "subject": "Refund", "sent_at": "2026-01-05T10:00:00Z",
             "text_body": "My parcel arrived damaged.",
             "attachments": [
                {"id": "att-invoice", "filename": "invoice.pdf", "content_type": "application/pdf",
                 "byte_size": 5, "data_base64": "JVBERi0="}]},
            {"message_id": "<r2@x>", "direction": "outbound", "from": "Acme <support@x>",
             "to": ["alice@x"], "cc": ["bob@x"], "subject": "Re: Refund",
             "sent_at": "2026-01-05T11:00:00Z", "text_body": "Could you send a photo?",
             "in_reply_to": "<r1@x>"},
            {"message_id": "<r2b@x>", "direction": "outbound", "from": "Acme <support@x>",
             "to": ["alice@x"], "subject": "Re: Refund", "sent_at": "2026-01-05T11:00:00Z",
             "text_body": "(sent twice)", "in_reply_to": "<r1@x>"}
        ]},
        {"subject": "Invoice", "messages": [
            {"message_id": "<i1@x>", "direction": "inbound", "from": "bob@x", "to": ["billing@x"],
             "subject": "Invoice", "sent_at": "2026-01-05T10:30:00Z", "text_body": "Where is it?",
             "attachments": [
                {"id": "att-other", "filename": "other.pdf", "content_type": "application/pdf",
                 "byte_size": 5, "data_base64": "JVBERi0="}]}
        ]}
    ]})
    .to_string()
}

/// One line per message: Message-ID, direction, and its attachments with their data.
fn summary(messages: &[MailMessage]) -> Vec<String> {
    messages
        .iter()
        .map(|m| {
            let attachments: Vec<String> = m
                .attachments
                .iter()
                .map(|a| format!("{}={:?}", a.attachment_id, a.data))
                .collect();
            format!(
                "{} {:?} [{}]",
                m.message_id,
                m.direction,
                attachments.join(", ")
            )
        })
        .collect()
}

#[tokio::test]
async fn a_thread_lists_its_messages_oldest_first_with_their_attachments() {
    on_each_backend("thread_messages", |db, _| async move {
        db::import_fixture_str(&db, &fixture()).await.unwrap();
        let current = db::load_message(&db, "<r3@x>").await.unwrap().unwrap();
        let thread = db::thread_messages(&db, current.thread_id).await.unwrap();
        assert_eq!(
            summary(&thread),
            [
                "<r1@x> Inbound [att-invoice=Some([37, 80, 68, 70, 45])]",
                "<r2@x> Outbound []",
                "<r2b@x> Outbound []",
                "<r3@x> Inbound [att-photo=Some([255, 216, 255]), att-note=None]",
            ]
        );
        // Each message is the one `load_message` gives for its Message-ID.
        for m in &thread {
            let alone = db::load_message(&db, &m.message_id).await.unwrap().unwrap();
            assert_eq!(&alone, m);
        }
        assert_eq!(thread[1].cc, ["bob@x"]);
        assert_eq!(thread[1].direction, Direction::Outbound);

        let other = db::load_message(&db, "<i1@x>").await.unwrap().unwrap();
        assert_ne!(other.thread_id, current.thread_id);
        assert_eq!(
            summary(&db::thread_messages(&db, other.thread_id).await.unwrap()),
            ["<i1@x> Inbound [att-other=Some([37, 80, 68, 70, 45])]"]
        );
    })
    .await;
}

#[tokio::test]
async fn an_unknown_message_or_thread_is_nothing_not_an_error() {
    on_each_backend("lookup_unknown", |db, _| async move {
        db::import_fixture_str(&db, &fixture()).await.unwrap();
        assert_eq!(db::load_message(&db, "<nope@x>").await.unwrap(), None);
        assert_eq!(db::thread_messages(&db, 9_999).await.unwrap(), []);
    })
    .await;
}

/// Closes every other connection to the database of `db` (a pool of one connection) from
/// the server's side; how many.
async fn close_the_others(db: &sea_orm::DatabaseConnection, backend: &str) -> usize {
    use sea_orm::ConnectionTrait as _;
    let ids = if backend == "postgres" {
        "SELECT pid::bigint AS id FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()"
    } else {
        "SELECT CAST(id AS SIGNED) AS id FROM information_schema.processlist \
         WHERE db = DATABASE() AND id <> CONNECTION_ID()"
    };
    let others = || async {
        let rows = db.query_all_raw(sea_orm::Statement::from_string(
            db.get_database_backend(),
            ids,
        ));
        let ids: Vec<i64> = rows
            .await
            .unwrap()
            .iter()
            .map(|r| r.try_get("", "id").unwrap())
            .collect();
        ids
    };
    let closed = others().await;
    for id in &closed {
        let kill = if backend == "postgres" {
            format!("SELECT pg_terminate_backend({id})")
        } else {
            format!("KILL {id}")
        };
        db.execute_unprepared(&kill).await.unwrap();
    }
    // PostgreSQL's `pg_terminate_backend` only signals the process: wait until it is gone.
    for _ in 0..500 {
        if others().await.is_empty() {
            return closed.len();
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the connections of {backend} were not closed within 5 s");
}

#[tokio::test]
async fn a_connection_the_server_closed_is_replaced_before_a_read_uses_it() {
    let dir = tempfile::tempdir().unwrap();
    for backend in common::backends() {
        if backend.name == "sqlite" {
            continue;
        }
        let (url, name) = backend.fresh_url("closed_by_server", dir.path()).await;
        let conn = db::open(&url).await.unwrap();
        db::import_fixture_str(&conn, &fixture()).await.unwrap();
        // One connection, so the statements that close the others run on it.
        let mut one = sea_orm::ConnectOptions::new(url.clone());
        one.max_connections(1).sqlx_logging(false);
        let other = sea_orm::Database::connect(one).await.unwrap();
        let found = || db::load_message(&conn, "<r1@x>");
        assert!(found().await.unwrap().is_some());

        // Idle for a while: pinged, found closed, replaced.
        tokio::time::sleep(std::time::Duration::from_millis(800)).await;
        assert!(close_the_others(&other, backend.name).await >= 1);
        assert!(found().await.unwrap().is_some(), "on {}", backend.name);

        // Used just now: pinged all the same, so the read never sees the closed
        // connection.
        close_the_others(&other, backend.name).await;
        assert!(found().await.unwrap().is_some(), "on {}", backend.name);
        conn.close().await.ok();
        other.close().await.ok();
        backend.drop_database(name).await;
    }
}
