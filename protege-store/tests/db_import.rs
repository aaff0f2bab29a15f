//! Connecting, migrating, fixture import (errors with JSON paths, nothing half-imported,
//! idempotence) and `load_message`, on every configured backend.

#[path = "../../protege-core/tests/common/mod.rs"]
mod common;

use common::{import, on_each_backend};
use protege::db::{self, Migrator};
use protege_core::{Direction, ErrorKind};
use sea_orm::{ConnectionTrait, DatabaseConnection, EntityTrait, PaginatorTrait};
use serde_json::{Value, json};

/// Row counts of the four tables.
async fn counts(db: &DatabaseConnection) -> [u64; 4] {
    use db::entities::*;
    [
        email_thread::Entity::find().count(db).await.unwrap(),
        message::Entity::find().count(db).await.unwrap(),
        attachment::Entity::find().count(db).await.unwrap(),
        tool_use::Entity::find().count(db).await.unwrap(),
    ]
}

/// A fixture of `protege-core/tests/fixtures/`, the ones the shared helpers import.
fn fixture_file(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../protege-core/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// A valid one-thread fixture with one message to corrupt.
fn base() -> Value {
    json!({"threads": [{"subject": "S", "messages": [
        {"message_id": "<ok@x>", "direction": "inbound", "from": "a@x", "to": ["b@x"],
         "subject": "S", "sent_at": "2026-01-01T00:00:00Z", "text_body": "hi"},
        {"message_id": "<m@x>", "direction": "outbound", "from": "b@x", "to": ["a@x"], "cc": [],
         "subject": "S", "sent_at": "2026-01-01T00:01:00Z", "text_body": "hello", "html_body": null,
         "in_reply_to": "<ok@x>",
         "attachments": [{"id": "att-1", "filename": "a.png", "content_type": "image/png", "byte_size": 3, "data_base64": "YWJj"}],
         "tool_uses": [{"run_id": "r", "turn_index": 0, "position": 0, "tool_call_id": "c",
                        "name": "t", "input": {"k": 1}, "result": null}]}
    ]}]})
}

fn parse_error(fixture: &Value) -> String {
    let err = db::parse_fixture(&fixture.to_string()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Fixture);
    err.to_string()
}

#[test]
fn malformed_fixtures_name_the_json_path() {
    let m = "threads[0].messages[1]";
    let cases: Vec<(&str, Value, String)> = vec![
        (
            "sent_at",
            json!("2026-13-45T10:00:00Z"),
            format!("{m}.sent_at: invalid RFC 3339 timestamp `2026-13-45T10:00:00Z`"),
        ),
        (
            "direction",
            json!("sideways"),
            format!(
                "{m}.direction: unknown direction `sideways`, expected `inbound` or `outbound`"
            ),
        ),
        (
            "to",
            json!("b@x"),
            format!("{m}.to: expected an array of strings, found a string"),
        ),
        (
            "to",
            json!(["b@x", 3]),
            format!("{m}.to[1]: expected a string, found a number"),
        ),
        (
            "subject",
            json!(null),
            format!("{m}.subject: expected a string, found null"),
        ),
        (
            "bogus",
            json!(1),
            format!(
                "{m}.bogus: unknown field `bogus`, expected one of `message_id`, `direction`, `from`, `to`, `cc`, `subject`, `sent_at`, `text_body`, `html_body`, `in_reply_to`, `attachments`, `tool_uses`"
            ),
        ),
        (
            "message_id",
            json!("<ok@x>"),
            format!(
                "{m}.message_id: duplicate message id `<ok@x>` (first at threads[0].messages[0].message_id)"
            ),
        ),
        (
            "message_id",
            json!(" "),
            format!("{m}.message_id: must not be empty"),
        ),
    ];
    for (field, value, want) in cases {
        let mut f = base();
        f["threads"][0]["messages"][1][field] = value;
        assert_eq!(parse_error(&f), want);
    }
    let mut f = base();
    f["threads"][0]["messages"][1]
        .as_object_mut()
        .unwrap()
        .remove("from");
    assert_eq!(parse_error(&f), format!("{m}.from: missing required field"));
    let mut f = base();
    f["threads"][0]["messages"][1]["attachments"][0]["data_base64"] = json!("not base64!");
    assert_eq!(
        parse_error(&f),
        format!(
            "{m}.attachments[0].data_base64: invalid base64: unexpected character `!` at offset 10"
        )
    );
    let mut f = base();
    f["threads"][0]["messages"][1]["attachments"][0]["byte_size"] = json!(-1);
    assert_eq!(
        parse_error(&f),
        format!(
            "{m}.attachments[0].byte_size: expected an integer from 0 to 9223372036854775807, found `-1`"
        )
    );
    let mut f = base();
    f["threads"][0]["messages"][1]["tool_uses"][0]["input"] = json!(["k"]);
    assert_eq!(
        parse_error(&f),
        format!("{m}.tool_uses[0].input: expected a JSON object, found an array")
    );
    // A tool call id the providers reject, or a Message-ID backends compare differently.
    let long = "c".repeat(65);
    for (field, value, want) in [
        (
            "tool_call_id",
            "call 1:x",
            "invalid tool call id `call 1:x`",
        ),
        ("tool_call_id", "", "invalid tool call id ``"),
        ("tool_call_id", "call\n1", "invalid tool call id `call\\n1`"),
        (
            "tool_call_id",
            long.as_str(),
            &format!("invalid tool call id `{long}`"),
        ),
    ] {
        let mut f = base();
        f["threads"][0]["messages"][1]["tool_uses"][0][field] = json!(value);
        assert_eq!(
            parse_error(&f),
            format!(
                "{m}.tool_uses[0].{field}: {want}: expected 1 to 64 characters from `a-z`, `A-Z`, `0-9`, `_` and `-`"
            )
        );
    }
    for (field, value, shown) in [
        ("message_id", "<m@x> ", "<m@x> "),
        ("message_id", "<m @x>", "<m @x>"),
        ("message_id", "<m@x>\t", "<m@x>\\t"),
        ("in_reply_to", "<ok@x> ", "<ok@x> "),
        ("in_reply_to", "\u{a0}<ok@x>", "\u{a0}<ok@x>"),
    ] {
        let mut f = base();
        f["threads"][0]["messages"][1][field] = json!(value);
        assert_eq!(
            parse_error(&f),
            format!("{m}.{field}: invalid message id `{shown}`: a Message-ID has no white space")
        );
    }
    let mut f = base();
    f["threads"][0]["messages"][1]["tool_uses"][0]["turn_index"] = json!("0");
    assert_eq!(
        parse_error(&f),
        format!(
            "{m}.tool_uses[0].turn_index: expected an integer from 0 to 2147483647, found a string"
        )
    );
    let mut f = base();
    f["threads"][0]["messages"] = json!([]);
    assert_eq!(
        parse_error(&f),
        "threads[0].messages: a thread needs at least one message"
    );
    assert_eq!(
        parse_error(&json!([])),
        "(root): expected an object with the field `threads`"
    );
    assert_eq!(
        parse_error(&json!({"threads": {}})),
        "threads: expected an array, found an object"
    );
    let err = db::parse_fixture("{\"threads\": [").unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid JSON at line 1 column 13: EOF while parsing a list"
    );
}

#[tokio::test]
async fn import_summary_and_idempotent_reimport() {
    on_each_backend("idempotent", |db, _| async move {
        let text = fixture_file("support.json");
        let first = db::import_fixture_str(&db, &text).await.unwrap();
        assert_eq!(
            first.to_string(),
            "imported 2 threads, 9 messages (0 already present)"
        );
        let after_first = counts(&db).await;
        assert_eq!(after_first, [2, 9, 1, 2]);
        let second = db::import_fixture_str(&db, &text).await.unwrap();
        assert_eq!(
            second.to_string(),
            "imported 0 threads, 0 messages (9 already present)"
        );
        assert_eq!(counts(&db).await, after_first);
    })
    .await;
}

#[tokio::test]
async fn reimported_thread_with_new_messages_reuses_its_thread() {
    on_each_backend("reuse_thread", |db, _| async move {
        import(&db, "support.json").await;
        let extended = json!({"threads": [{"subject": "Refund for order A-1", "messages": [
            {"message_id": "<t1-m1@example.com>", "direction": "inbound", "from": "x", "to": [],
             "subject": "ignored", "sent_at": "2026-01-05T10:00:00Z"},
            {"message_id": "<t1-m7@example.com>", "direction": "outbound", "from": "Acme Support <support@acme.test>",
             "to": ["Alice Example <alice@example.com>"], "subject": "Re: Refund for order A-1",
             "sent_at": "2026-01-09T10:00:00Z", "text_body": "Glad to hear it."}
        ]}]});
        let summary = db::import_fixture_str(&db, &extended.to_string()).await.unwrap();
        assert_eq!(summary.to_string(), "imported 1 thread, 1 message (1 already present)");
        let old = db::load_message(&db, "<t1-m1@example.com>").await.unwrap().unwrap();
        let new = db::load_message(&db, "<t1-m7@example.com>").await.unwrap().unwrap();
        assert_eq!(new.thread_id, old.thread_id);
        assert_eq!(counts(&db).await[0], 2);
    })
    .await;
}

/// NUL, which PostgreSQL rejects in text, is left out of the identifiers a fixture stores
/// and of every lookup: the import, a second import, `load_message` and a summary agree on
/// every backend.
#[tokio::test]
async fn identifiers_with_nul_are_stored_and_found_without_it() {
    on_each_backend("nul_ids", |db, _| async move {
        let mut f = base();
        f["threads"][0]["messages"][0]["message_id"] = json!("<o\u{0}k@x>");
        f["threads"][0]["messages"][1]["in_reply_to"] = json!("<o\u{0}k@x>");
        f["threads"][0]["messages"][1]["attachments"][0]["id"] = json!("att\u{0}-1");
        let text = f.to_string();
        let first = db::import_fixture_str(&db, &text).await.unwrap();
        assert_eq!(
            first.to_string(),
            "imported 1 thread, 2 messages (0 already present)"
        );
        let second = db::import_fixture_str(&db, &text).await.unwrap();
        assert_eq!(
            second.to_string(),
            "imported 0 threads, 0 messages (2 already present)"
        );
        let stored = db::load_message(&db, "<ok@x>").await.unwrap().unwrap();
        assert_eq!(stored.message_id, "<ok@x>");
        let reply = db::load_message(&db, "<m@x>").await.unwrap().unwrap();
        assert_eq!(reply.in_reply_to.as_deref(), Some("<ok@x>"));
        assert_eq!(reply.attachments[0].attachment_id, "att-1");
        let looked_up = db::load_message(&db, "<o\u{0}k@x>").await.unwrap().unwrap();
        assert_eq!(looked_up.id, stored.id);
        let now = chrono::DateTime::parse_from_rfc3339("2026-01-02T00:00:00Z")
            .unwrap()
            .to_utc();
        let summary = db::store_summary(&db, "<o\u{0}k@x>", "Alice said hi.", now)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (summary.thread_id, summary.through_message_id.as_str()),
            (stored.thread_id, "<ok@x>")
        );
        // The same id written without NUL is the same message.
        let mut plain = base();
        plain["threads"][0]["messages"]
            .as_array_mut()
            .unwrap()
            .truncate(1);
        let again = db::import_fixture_str(&db, &plain.to_string())
            .await
            .unwrap();
        assert_eq!(
            again.to_string(),
            "imported 0 threads, 0 messages (1 already present)"
        );
        assert_eq!(counts(&db).await, [1, 2, 1, 1]);
    })
    .await;
}

#[tokio::test]
async fn a_bad_fixture_imports_nothing() {
    on_each_backend("nothing_half_imported", |db, _| async move {
        import(&db, "support.json").await;
        let before = counts(&db).await;
        // The second thread is malformed: the first is not imported either.
        let mut f = base();
        let mut bad = f["threads"][0].clone();
        bad["messages"][0]["message_id"] = json!("<other@x>");
        bad["messages"][1]["message_id"] = json!("<other2@x>");
        bad["messages"][1]["attachments"][0]["id"] = json!("att-2");
        bad["messages"][0]["sent_at"] = json!("last tuesday");
        f["threads"].as_array_mut().unwrap().push(bad);
        let err = db::import_fixture_str(&db, &f.to_string()).await.unwrap_err();
        assert_eq!(err.to_string(), "threads[1].messages[0].sent_at: invalid RFC 3339 timestamp `last tuesday`");
        assert_eq!(counts(&db).await, before);
        // A conflict found only against the database also leaves nothing behind.
        let mut f = base();
        f["threads"][0]["messages"][1]["attachments"][0]["id"] = json!("att-inv-1");
        let err = db::import_fixture_str(&db, &f.to_string()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Fixture);
        assert_eq!(err.to_string(), "threads[0].messages[1].attachments[0].id: attachment id `att-inv-1` is already stored with another message");
        assert_eq!(counts(&db).await, before);
    })
    .await;
}

#[tokio::test]
async fn load_message_returns_attachments_with_data_in_order() {
    on_each_backend("load_message", |db, _| async move {
        db::import_fixture_str(&db, &base().to_string()).await.unwrap();
        let m = db::load_message(&db, "<m@x>").await.unwrap().unwrap();
        assert_eq!(m.message_id, "<m@x>");
        assert_eq!(m.direction, Direction::Outbound);
        assert_eq!((m.from.as_str(), m.to.clone(), m.cc.clone()), ("b@x", vec!["a@x".to_owned()], vec![]));
        assert_eq!(m.in_reply_to.as_deref(), Some("<ok@x>"));
        assert_eq!(protege_core::rfc3339_z(&m.sent_at), "2026-01-01T00:01:00Z");
        assert_eq!(m.attachments.len(), 1);
        assert_eq!(m.attachments[0].attachment_id, "att-1");
        assert_eq!(m.attachments[0].data.as_deref(), Some(&b"abc"[..]));
        assert_eq!(m.to_llm_text(), "From: b@x\nTo: a@x\nCc:\nDate: Thu, 1 Jan 2026 00:01:00 +0000\nSubject: S\n\nhello\n\nAttachments:\n- a.png (image/png, 3 bytes, id: att-1)");
        assert!(db::load_message(&db, "<nope@x>").await.unwrap().is_none());
        // The input object keeps its key order, byte for byte.
        let row = db
            .query_one_raw(sea_orm::Statement::from_string(db.get_database_backend(), "SELECT input FROM tool_uses"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.try_get_by_index::<String>(0).unwrap(), r#"{"k":1}"#);
    })
    .await;
}

#[tokio::test]
async fn migrations_are_idempotent_and_reversible() {
    on_each_backend("migrations", |db, _| async move {
        db::migrate(&db).await.unwrap();
        import(&db, "tools.json").await;
        db::store_summary(&db, "<lookup-1@example.com>", "so far", chrono::Utc::now())
            .await
            .unwrap()
            .expect("a stored message");
        Migrator::down(&db, None).await.unwrap();
        let select = |table: &str| {
            db.query_all_raw(sea_orm::Statement::from_string(
                db.get_database_backend(),
                format!("SELECT * FROM {table}"),
            ))
        };
        assert!(select("messages").await.is_err());
        assert!(select("thread_summaries").await.is_err());
        assert!(select("runs").await.is_err());
        assert!(select("run_rounds").await.is_err());
        db::migrate(&db).await.unwrap();
        assert_eq!(counts(&db).await, [0, 0, 0, 0]);
        assert_eq!(select("thread_summaries").await.unwrap().len(), 0);
        assert_eq!(select("runs").await.unwrap().len(), 0);
        assert_eq!(select("run_rounds").await.unwrap().len(), 0);
    })
    .await;
}

/// A migration stopped half-way (its statements run, its record not written: MySQL's
/// schema statements are not transactional) runs again to its end on every backend: the
/// index it had made already is left as it is.
#[tokio::test]
async fn a_migration_stopped_half_way_runs_again() {
    on_each_backend("half_way", |db, _| async move {
        db::migrate(&db).await.unwrap();
        let last = *Migrator::names().last().unwrap();
        db.execute_unprepared(&format!(
            "DELETE FROM protege_migrations WHERE version = '{last}'"
        ))
        .await
        .unwrap();
        assert_eq!(Migrator::pending(&db).await.unwrap(), [last]);
        assert_eq!(db::migrate(&db).await.unwrap(), [last]);
        assert!(Migrator::pending(&db).await.unwrap().is_empty());
    })
    .await;
}

/// A database that recorded a migration this build does not ship is left alone: migrating
/// it fails and names the migration.
#[tokio::test]
async fn a_migration_this_build_does_not_ship_is_refused() {
    on_each_backend("unknown_migration", |db, _| async move {
        db.execute_unprepared(
            "INSERT INTO protege_migrations (version, applied_at) \
             VALUES ('m29990101_000001_from_a_later_build', 0)",
        )
        .await
        .unwrap();
        let err = db::migrate(&db).await.unwrap_err();
        assert!(
            err.to_string()
                .contains("m29990101_000001_from_a_later_build"),
            "{err}"
        );
        assert!(Migrator::pending(&db).await.is_err());
    })
    .await;
}

/// A database already at the shipped schema is checked with one statement and left alone;
/// one a migration behind is migrated as before.
#[tokio::test]
async fn an_up_to_date_database_is_migrated_in_one_statement() {
    for backend in common::backends() {
        let dir = tempfile::tempdir().unwrap();
        let (url, name) = backend.fresh_url("migrate_once", dir.path()).await;
        db::migrate(&db::connect(&url).await.unwrap())
            .await
            .unwrap();
        let mut conn = db::connect(&url).await.unwrap();
        let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = count.clone();
        conn.set_metric_callback(move |_| {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });
        db::migrate(&conn).await.unwrap();
        assert_eq!(
            count.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "on {}",
            backend.name
        );
        Migrator::down(&conn, Some(1)).await.unwrap();
        count.store(0, std::sync::atomic::Ordering::SeqCst);
        db::migrate(&conn).await.unwrap();
        assert!(
            count.load(std::sync::atomic::Ordering::SeqCst) > 1,
            "on {}",
            backend.name
        );
        let pending = Migrator::pending(&conn).await.unwrap();
        assert!(pending.is_empty(), "on {}", backend.name);
        conn.close().await.ok();
        backend.drop_database(name).await;
    }
}

/// The runs' migration adds `tool_uses.is_error` to rows stored before it (as false), and
/// its down removes the column and the runs' tables, keeping the tool uses.
#[tokio::test]
async fn the_runs_migration_keeps_the_tool_uses() {
    on_each_backend("runs_migration", |db, _| async move {
        // Down twelve: the settings' migration, the second HTML conversion, the addresses,
        // the stripped bodies, the second rules, the outbox, the agent's jobs, the slots'
        // wall-clock times, the inbox, the erasure tables and the daily cap's index came
        // after it.
        Migrator::down(&db, Some(12)).await.unwrap();
        let select = |sql: &str| {
            db.query_all_raw(sea_orm::Statement::from_string(
                db.get_database_backend(),
                sql.to_owned(),
            ))
        };
        assert!(select("SELECT is_error FROM tool_uses").await.is_err());
        assert!(select("SELECT id FROM runs").await.is_err());
        db.execute_unprepared(
            "INSERT INTO email_threads (id, subject, created_at) VALUES (1, 'S', '2026-01-01 00:00:00')",
        )
        .await
        .unwrap();
        db.execute_unprepared(
            "INSERT INTO messages (id, email_thread_id, message_id, direction, from_address, to_addresses, cc_addresses, subject, sent_at) \
             VALUES (1, 1, '<m@x>', 'inbound', 'a@x', '[]', '[]', 'S', '2026-01-01 00:00:00')",
        )
        .await
        .unwrap();
        db.execute_unprepared(
            "INSERT INTO tool_uses (message_id, run_id, turn_index, position, tool_call_id, name, input, result) \
             VALUES (1, 'r', 0, 0, 'c', 'n', '{}', 'ok')",
        )
        .await
        .unwrap();
        db::migrate(&db).await.unwrap();
        let rows = select("SELECT is_error FROM tool_uses").await.unwrap();
        assert_eq!(rows.len(), 1);
        assert!(!rows[0].try_get_by_index::<bool>(0).unwrap());
        assert_eq!(select("SELECT id FROM runs").await.unwrap().len(), 0);
    })
    .await;
}

/// The addresses' migration writes the rows of the messages stored before it: each
/// distinct From, To and Cc address once, lowercased and bare, a participant when it is the
/// From or a recipient of an outbound message; an import writes the same rows.
#[tokio::test]
async fn the_addresses_migration_indexes_the_stored_messages() {
    on_each_backend("addresses_migration", |db, _| async move {
        let select = |sql: &str| {
            db.query_all_raw(sea_orm::Statement::from_string(
                db.get_database_backend(),
                sql.to_owned(),
            ))
        };
        let rows = || async {
            select(
                "SELECT message_id, email_thread_id, address, participant FROM message_addresses \
                 ORDER BY message_id, address",
            )
            .await
            .unwrap()
            .iter()
            .map(|r| {
                format!(
                    "{} {} {} {}",
                    r.try_get_by_index::<i64>(0).unwrap(),
                    r.try_get_by_index::<i64>(1).unwrap(),
                    r.try_get_by_index::<String>(2).unwrap(),
                    r.try_get_by_index::<bool>(3).unwrap()
                )
            })
            .collect::<Vec<_>>()
        };
        // Down nine: the stripped bodies, the second rules, the outbox, the agent's jobs,
        // the slots' wall-clock times, the inbox, the erasure tables and the daily cap's
        // index came after it.
        Migrator::down(&db, Some(9)).await.unwrap();
        assert!(select("SELECT id FROM message_addresses").await.is_err());
        db.execute_unprepared(
            "INSERT INTO email_threads (id, subject, created_at) VALUES (1, 'S', '2026-01-01 00:00:00')",
        )
        .await
        .unwrap();
        db.execute_unprepared(
            "INSERT INTO messages (id, email_thread_id, message_id, direction, from_address, to_addresses, cc_addresses, subject, sent_at) VALUES \
             (1, 1, '<m1@x>', 'inbound', 'Ann <Ann@Example.com>', '[\"support@acme.test\", \"ann@example.com\"]', '[\"Bob <bob@x.test>\"]', 'S', '2026-01-01 00:00:00'), \
             (2, 1, '<m2@x>', 'outbound', 'support@acme.test', '[\"Ann <ann@example.com>\"]', '[\"\"]', 'S', '2026-01-02 00:00:00')",
        )
        .await
        .unwrap();
        db::migrate(&db).await.unwrap();
        let want = [
            "1 1 ann@example.com true",
            "1 1 bob@x.test false",
            "1 1 support@acme.test false",
            "2 1 ann@example.com true",
            "2 1 support@acme.test true",
        ];
        assert_eq!(rows().await, want);
        // An import writes the same rows.
        db.execute_unprepared("DELETE FROM message_addresses").await.unwrap();
        db.execute_unprepared("DELETE FROM messages").await.unwrap();
        db.execute_unprepared("DELETE FROM email_threads").await.unwrap();
        db::import_fixture_str(
            &db,
            r#"{"threads":[{"subject":"S","messages":[
              {"message_id":"<m1@x>","direction":"inbound","from":"Ann <Ann@Example.com>",
               "to":["support@acme.test","ann@example.com"],"cc":["Bob <bob@x.test>"],
               "subject":"S","sent_at":"2026-01-01T00:00:00Z","text_body":"a"},
              {"message_id":"<m2@x>","direction":"outbound","from":"support@acme.test",
               "to":["Ann <ann@example.com>"],"subject":"S","sent_at":"2026-01-02T00:00:00Z",
               "text_body":"b"}]}]}"#,
        )
        .await
        .unwrap();
        let ids = select("SELECT id, email_thread_id FROM messages ORDER BY id")
            .await
            .unwrap();
        let (first, thread) = (
            ids[0].try_get_by_index::<i64>(0).unwrap(),
            ids[0].try_get_by_index::<i64>(1).unwrap(),
        );
        let renumbered: Vec<String> = want
            .iter()
            .map(|r| {
                let (id, rest) = r.split_once(' ').unwrap();
                let (_, rest) = rest.split_once(' ').unwrap();
                let id: i64 = id.parse().unwrap();
                format!("{} {thread} {rest}", first + id - 1)
            })
            .collect();
        assert_eq!(rows().await, renumbered);
    })
    .await;
}

#[tokio::test]
async fn connect_creates_sqlite_files_and_names_unreachable_servers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    let conn = db::open(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    conn.close().await.unwrap();
    assert!(path.exists());

    let err = db::connect("postgres://app:s3cret@127.0.0.1:1/app")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Database);
    let text = err.to_string();
    assert!(
        text.starts_with("cannot connect to database `postgres://app:***@127.0.0.1:1/app`: "),
        "{text}"
    );
    assert!(!text.contains("s3cret"));

    let err = db::connect("mariadb://root@127.0.0.1:1/x")
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cannot connect to database `mariadb://root@127.0.0.1:1/x`: "),
        "{err}"
    );

    let err = db::connect("oracle://x").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "unsupported database URL `oracle://x`: expected `sqlite://PATH`, `sqlite::memory:`, `postgres://...` or `mysql://...`"
    );
    assert_eq!(
        db::redact_url("mysql://u:p@h:1/d?x=1"),
        "mysql://u:***@h:1/d?x=1"
    );
}

/// A thread of 300 HTML-only messages (more than one page of the migration), then one with
/// both bodies, one with text only and one whose HTML is blank.
fn html_fixture() -> String {
    let mut messages: Vec<Value> = (0..300)
        .map(|i| {
            json!({"message_id": format!("<h{i}@x>"), "direction": "inbound", "from": "a@x",
                   "to": ["b@x"], "subject": "S", "sent_at": format!("2026-01-01T00:{:02}:{:02}Z", i / 60, i % 60),
                   "html_body": format!("<p>Hi &amp; {i}</p><ul><li>one<li>two</ul><script>x()</script>\u{0}")})
        })
        .collect();
    for (id, text, html) in [
        (
            "<both@x>",
            json!("Plain text wins."),
            json!("<p>HTML loses</p>"),
        ),
        ("<text@x>", json!("Only text."), json!(null)),
        ("<blank@x>", json!(null), json!("  \n ")),
    ] {
        messages.push(
            json!({"message_id": id, "direction": "inbound", "from": "a@x",
            "to": ["b@x"], "subject": "S", "sent_at": "2026-01-02T00:00:00Z",
            "text_body": text, "html_body": html}),
        );
    }
    json!({"threads": [{"subject": "S", "messages": messages}]}).to_string()
}

/// `(Message-ID, html_text)` of every message, in id order.
async fn html_texts(db: &DatabaseConnection) -> Vec<(String, Option<String>)> {
    let rows = db
        .query_all_raw(sea_orm::Statement::from_string(
            db.get_database_backend(),
            "SELECT message_id, html_text FROM messages ORDER BY id",
        ))
        .await
        .unwrap();
    rows.iter()
        .map(|r| {
            (
                r.try_get("", "message_id").unwrap(),
                r.try_get("", "html_text").unwrap(),
            )
        })
        .collect()
}

/// The rendering of every message, and the thread history of a reply after all of them.
async fn renderings(db: &DatabaseConnection) -> (Vec<String>, Value) {
    let mut out = Vec::new();
    for (id, _) in html_texts(db).await {
        out.push(
            db::load_message(db, &id)
                .await
                .unwrap()
                .unwrap()
                .to_llm_text(),
        );
    }
    let ctx = common::reply_ctx(db, "<blank@x>").await;
    let history = protege_core::ThreadHistory::new().limit(3);
    let messages = protege_core::Resolver::resolve(&history, &ctx)
        .await
        .unwrap();
    (out, serde_json::to_value(messages).unwrap())
}

async fn html_is_converted_once(db: DatabaseConnection) {
    db::import_fixture_str(&db, &html_fixture()).await.unwrap();
    let stored = html_texts(&db).await;
    assert_eq!(stored.len(), 303);
    assert_eq!(
        stored[7],
        ("<h7@x>".to_owned(), Some("Hi & 7\n* one\n* two".to_owned()))
    );
    assert_eq!(
        stored[300..],
        [
            ("<both@x>".to_owned(), Some("HTML loses".to_owned())),
            ("<text@x>".to_owned(), None),
            ("<blank@x>".to_owned(), Some(String::new())),
        ]
    );
    let rendered = renderings(&db).await;
    assert_eq!(
        rendered.0[7],
        "From: a@x\nTo: b@x\nCc:\nDate: Thu, 1 Jan 2026 00:00:07 +0000\nSubject: S\n\nHi & 7\n* one\n* two"
    );
    assert_eq!(
        rendered.1,
        json!([
            {"role": "user", "content": "From: a@x\nTo: b@x\nCc:\nDate: Thu, 1 Jan 2026 00:04:59 +0000\nSubject: S\n\nHi & 299\n* one\n* two"},
            {"role": "user", "content": "From: a@x\nTo: b@x\nCc:\nDate: Fri, 2 Jan 2026 00:00:00 +0000\nSubject: S\n\nPlain text wins."},
            {"role": "user", "content": "From: a@x\nTo: b@x\nCc:\nDate: Fri, 2 Jan 2026 00:00:00 +0000\nSubject: S\n\nOnly text."},
        ])
    );

    // Rows stored before the column existed: the migration converts each of them (down
    // thirteen: the runs', the settings', the second conversion's, the addresses', the
    // stripped bodies', the second rules', the outbox's, the agent's jobs', the slots'
    // wall-clock times', the inbox's, the erasure tables' and the daily cap's index's
    // migrations came after it).
    Migrator::down(&db, Some(13)).await.unwrap();
    let old = db
        .query_all_raw(sea_orm::Statement::from_string(
            db.get_database_backend(),
            "SELECT html_text FROM messages",
        ))
        .await;
    assert!(old.is_err(), "the column is dropped");
    db::migrate(&db).await.unwrap();
    assert_eq!(html_texts(&db).await, stored);
    assert_eq!(renderings(&db).await, rendered);

    // A row stored without its text (by an older version) still renders the same.
    db.execute_unprepared("UPDATE messages SET html_text = NULL")
        .await
        .unwrap();
    assert_eq!(renderings(&db).await, rendered);
}

/// HTML bodies are converted to text once, when stored (fixture import here; `import-eml`
/// and `POST /v1/mail` share the write path); the migration that adds the column converts
/// the rows stored before it; every rendering stays byte for byte the same, on every
/// backend and on a SQLite file (read by the embedded reader).
#[tokio::test]
async fn html_bodies_are_stored_as_text_once_and_migrated() {
    on_each_backend("html_text", |db, _| html_is_converted_once(db)).await;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("h.db").display());
    html_is_converted_once(db::open(&url).await.unwrap()).await;
}

/// The stripped bodies' migration strips the mail stored before it as an import would have:
/// the same rows, each message against every earlier message of its thread (an HTML-only
/// body by its stored text: Ann sends her first mail again below a line); its down drops
/// the table.
#[tokio::test]
async fn the_strips_migration_strips_the_stored_messages() {
    on_each_backend("strips_migration", |db, _| async move {
        let first = "Can you resend the invoice for March?\nThe PDF was empty, and the link in \
                     your mail has expired.";
        let fixture = json!({"threads": [{"subject": "Invoice", "messages": [
            {"message_id": "<a@x>", "direction": "inbound", "from": "ann@x.test",
             "to": ["billing@acme.test"], "subject": "Invoice", "sent_at": "2026-03-01T09:00:00Z", "text_body": first},
            {"message_id": "<b@x>", "direction": "inbound", "from": "ann@x.test",
             "to": ["billing@acme.test"], "subject": "Invoice", "sent_at": "2026-03-01T10:00:00Z",
             "html_body": format!("<p>Sent again.</p><p>{}</p>", first.replace('\n', "<br>"))},
            {"message_id": "<c@x>", "direction": "inbound", "from": "ann@x.test",
             "to": ["billing@acme.test"], "subject": "Invoice", "sent_at": "2026-03-01T11:00:00Z",
             "text_body": "Thanks!\n\nSent from my iPhone"}
        ]}]});
        db::import_fixture_str(&db, &fixture.to_string()).await.unwrap();
        let select = |sql: &str| {
            db.query_all_raw(sea_orm::Statement::from_string(
                db.get_database_backend(),
                sql.to_owned(),
            ))
        };
        let rows = || async {
            select(
                "SELECT m.message_id, s.text, s.removed, s.rules FROM message_strips s \
                 JOIN messages m ON m.id = s.message_id ORDER BY m.id",
            )
            .await
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r.try_get_by_index::<String>(0).unwrap(),
                    r.try_get_by_index::<Option<String>>(1).unwrap(),
                    r.try_get_by_index::<i64>(2).unwrap(),
                    r.try_get_by_index::<i32>(3).unwrap(),
                )
            })
            .collect::<Vec<_>>()
        };
        let rules = protege_mail::STRIP_RULES;
        let want = vec![
            ("<a@x>".to_owned(), None, 0, rules),
            (
                "<b@x>".to_owned(),
                Some("Sent again.".to_owned()),
                i64::try_from(first.chars().count() + 2).unwrap(),
                rules,
            ),
            (
                "<c@x>".to_owned(),
                Some("Thanks!".to_owned()),
                i64::try_from("\n\nSent from my iPhone".len()).unwrap(),
                rules,
            ),
        ];
        assert_eq!(rows().await, want);
        // Down eight: the daily cap's index's, the erasure tables', the inbox's, the slots'
        // wall-clock times', the agent's jobs', the outbox's and the second rules'
        // migrations (which keep the rows) and this one.
        Migrator::down(&db, Some(8)).await.unwrap();
        assert!(select("SELECT id FROM message_strips").await.is_err());
        db::migrate(&db).await.unwrap();
        assert_eq!(rows().await, want);
    })
    .await;
}
