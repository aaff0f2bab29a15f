//! The stripped bodies stored with the mail (`message_strips`, DESIGN §14 `quoted =
//! "strip"`), on every backend: each message stripped once, when it is stored, against the
//! earlier messages of its thread (not only the history's window; block by block in a long
//! thread); stripped again when an earlier message arrives late or one is erased; and a read
//! that finds no row of the current rules, or a row made from another body, strips the body
//! itself with the same result.

use protege::db::sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use protege::{Direction, Engine, Format, PriorBodies, ResolveInput};
use serde_json::Value;

mod common;
use common::server::every_backend;

const KIM: &str = "Kim Lee <kim@example.com>";
const SUPPORT: &str = "Acme Support <support@acme.test>";

/// Kim's first mail.
const FIRST: &str = "Hi,\nmy order A-1042 has not arrived yet. It was due on Monday.\n\
                     Can you check the tracking number for me please?";
/// The reply: no quote.
const REPLY: &str = "Hello Kim,\nthe carrier says it arrives tomorrow.";
/// Kim again, with the first mail pasted below without `>` or an attribution line: only
/// step 1, comparing it with the earlier messages of the thread, finds it.
const AGAIN: &str = "Still nothing today.\n\nmy order A-1042 has not arrived yet. It was due on \
                     Monday.\nCan you check the tracking number for me please?";
/// Kim's last mail, the trigger.
const LAST: &str = "Any news?";

/// A persona whose history shows `limit` messages, bodies stripped.
fn root(limit: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    let persona = format!(
        "addresses = [\"support@acme.test\"]\n\n[mail]\nquoted = \"strip\"\n\n\
         [[message_resolvers]]\nuse = \"ThreadHistory\"\n{limit}\n"
    );
    std::fs::write(root.path().join("personas/support.toml"), persona).unwrap();
    root
}

/// The mail `id` of the thread, sent at minute `minute`: Kim's (`kim-…`) to support,
/// support's to Kim.
fn raw(id: &str, parent: Option<&str>, minute: u32, body: &str) -> (String, Direction) {
    if id.starts_with("kim") {
        mail(id, (KIM, "support@acme.test", ""), parent, minute, body)
    } else {
        mail(id, (SUPPORT, "kim@example.com", ""), parent, minute, body)
    }
}

/// The mail `id` from, to and cc `who`, sent at minute `minute`; outbound when from support.
fn mail(
    id: &str,
    (from, to, cc): (&str, &str, &str),
    parent: Option<&str>,
    minute: u32,
    body: &str,
) -> (String, Direction) {
    let direction = if from == SUPPORT {
        Direction::Outbound
    } else {
        Direction::Inbound
    };
    let reply = parent
        .map(|p| format!("In-Reply-To: <{p}@example.com>\r\nReferences: <{p}@example.com>\r\n"))
        .unwrap_or_default();
    let cc = if cc.is_empty() {
        String::new()
    } else {
        format!("Cc: {cc}\r\n")
    };
    let text = format!(
        "Message-ID: <{id}@example.com>\r\nFrom: {from}\r\nTo: {to}\r\n{cc}Subject: Order A-1042\r\n\
         Date: Tue, 10 Mar 2026 09:{minute:02}:00 +0000\r\n{reply}\r\n{}\r\n",
        body.replace('\n', "\r\n")
    );
    (text, direction)
}

fn first() -> (String, Direction) {
    raw("kim-1", None, 0, FIRST)
}
fn reply() -> (String, Direction) {
    raw("reply-1", Some("kim-1"), 30, REPLY)
}
fn again() -> (String, Direction) {
    raw("kim-2", Some("kim-1"), 45, AGAIN)
}
fn last() -> (String, Direction) {
    raw("kim-3", Some("kim-2"), 50, LAST)
}

async fn engine(root: &std::path::Path, url: &str) -> Engine {
    Engine::builder()
        .root(root)
        .database(url)
        .build()
        .await
        .unwrap()
}

async fn ingest(engine: &Engine, mail: (String, Direction)) {
    engine
        .ingest_mail(mail.0.as_bytes(), Some(mail.1))
        .await
        .unwrap();
}

/// The contents of the request's messages.
async fn contents(engine: &Engine) -> Vec<String> {
    let input = ResolveInput::reply("support", "<kim-3@example.com>")
        .format(Format::Messages)
        .now("2026-03-10T10:00:00Z".parse().unwrap());
    let out = engine.resolve(&input).await.unwrap();
    out.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let content = m["content"].as_str().unwrap();
            // The body: what follows the header block.
            content.split_once("\n\n").unwrap().1.to_owned()
        })
        .collect()
}

async fn rows(db: &DatabaseConnection, sql: &str) -> Vec<Vec<Value>> {
    db.query_all_raw(Statement::from_string(
        db.get_database_backend(),
        sql.to_owned(),
    ))
    .await
    .unwrap()
    .iter()
    .map(|r| {
        let text: Option<String> = r.try_get_by_index(1).unwrap();
        vec![
            Value::from(r.try_get_by_index::<String>(0).unwrap()),
            text.map_or(Value::Null, Value::from),
            Value::from(r.try_get_by_index::<i64>(2).unwrap()),
        ]
    })
    .collect()
}

/// `(Message-ID, stored text, characters removed)` of every row, in the thread's order.
async fn stored(db: &DatabaseConnection) -> Vec<Vec<Value>> {
    rows(
        db,
        "SELECT m.message_id, s.text, s.removed FROM message_strips s \
         JOIN messages m ON m.id = s.message_id ORDER BY m.sent_at, m.id",
    )
    .await
}

/// The same, made here by walking the thread's stored bodies in order: what a writer must
/// have stored.
async fn walked(db: &DatabaseConnection) -> Vec<Vec<Value>> {
    let bodies = db
        .query_all_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT message_id, text_body FROM messages ORDER BY sent_at, id".to_owned(),
        ))
        .await
        .unwrap();
    let mut prior = PriorBodies::new();
    bodies
        .iter()
        .map(|r| {
            let id: String = r.try_get_by_index(0).unwrap();
            let body: String = r.try_get_by_index(1).unwrap();
            let body = body.trim();
            let s = prior.strip_next(body);
            let text = (s.removed > 0 || s.text != body).then(|| Value::from(s.text.as_ref()));
            vec![
                Value::from(id),
                text.unwrap_or(Value::Null),
                Value::from(s.removed as i64),
            ]
        })
        .collect()
}

fn row(id: &str, text: Option<&str>, removed: usize) -> Vec<Value> {
    vec![
        Value::from(format!("<{id}@example.com>")),
        text.map_or(Value::Null, Value::from),
        Value::from(removed as i64),
    ]
}

/// The rows of the thread once its four messages are stored: Kim's paste of her first
/// mail removed from her second.
fn stored_thread() -> [Vec<Value>; 4] {
    [
        row("kim-1", None, 0),
        row("reply-1", None, 0),
        row(
            "kim-2",
            Some("Still nothing today."),
            removed(AGAIN, "Still nothing today."),
        ),
        row("kim-3", None, 0),
    ]
}

fn removed(body: &str, kept: &str) -> usize {
    body.chars().count() - kept.chars().count()
}

#[tokio::test]
async fn a_message_is_stripped_against_every_earlier_message_of_its_thread() {
    let dir = tempfile::tempdir().unwrap();
    // The history shows one message: Kim's second, whose paste of the first is removed
    // although the first is outside the window.
    let root = root("limit = 1");
    for (url, _) in every_backend(dir.path(), "stored_strips_window").await {
        let engine = engine(root.path(), &url).await;
        for mail in [first(), reply(), again(), last()] {
            ingest(&engine, mail).await;
        }
        assert_eq!(
            contents(&engine).await,
            ["Still nothing today.", LAST],
            "{url}"
        );
        let db = engine.db().await.unwrap();
        let want = stored_thread();
        assert_eq!(stored(db).await, want, "{url}");
        assert_eq!(walked(db).await, want, "{url}");
    }
}

/// Text is never removed from a message because of a message stored after it, whatever its
/// `Date` claims: Kim's second mail, stored first, keeps its paste of the first mail, which
/// arrives later dated earlier; and storing each late mail strips that mail alone.
#[tokio::test]
async fn mail_that_arrives_late_removes_nothing_from_mail_stored_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = root("");
    for (url, _) in every_backend(dir.path(), "stored_strips_late").await {
        let engine = engine(root.path(), &url).await;
        // Kim's second mail first: nothing before it to compare with.
        ingest(&engine, again()).await;
        let db = engine.db().await.unwrap();
        assert_eq!(stored(db).await, [row("kim-2", None, 0)], "{url}");
        // The first arrives (sent earlier, stored later): the second stays as it is.
        for mail in [first(), last(), reply()] {
            ingest(&engine, mail).await;
        }
        assert_eq!(
            stored(db).await,
            [
                row("kim-1", None, 0),
                row("reply-1", None, 0),
                row("kim-2", None, 0),
                row("kim-3", None, 0),
            ],
            "{url}"
        );
        assert_eq!(
            contents(&engine).await,
            [FIRST, REPLY, AGAIN, LAST],
            "{url}"
        );
    }
}

#[tokio::test]
async fn a_read_without_rows_or_with_a_changed_body_strips_the_body_itself() {
    let dir = tempfile::tempdir().unwrap();
    let root = root("limit = 1");
    for (url, _) in every_backend(dir.path(), "stored_strips_missing").await {
        let engine = engine(root.path(), &url).await;
        for mail in [first(), reply(), again(), last()] {
            ingest(&engine, mail).await;
        }
        let want = contents(&engine).await;
        let db = engine.db().await.unwrap();
        // Rows of other rules, then none at all (written by another program): the same
        // request, stripped by the read against the whole thread.
        db.execute_unprepared("UPDATE message_strips SET rules = 0")
            .await
            .unwrap();
        assert_eq!(contents(&engine).await, want, "{url}");
        db.execute_unprepared("DELETE FROM message_strips")
            .await
            .unwrap();
        assert_eq!(contents(&engine).await, want, "{url}");
        assert_eq!(stored(db).await, Vec::<Vec<Value>>::new(), "{url}");
        // A message deleted by hand takes its row with it (the key cascades).
        let thread = protege::db::load_message(db, "<kim-1@example.com>")
            .await
            .unwrap()
            .unwrap()
            .thread_id;
        protege::db::strips::restrip(db, &[thread], &Default::default())
            .await
            .unwrap();
        assert_eq!(stored(db).await, walked(db).await, "{url}");
        // A body changed by hand (an operator's redaction): its stored text is not shown.
        db.execute_unprepared(
            "UPDATE messages SET text_body = 'Redacted.' WHERE message_id = '<kim-2@example.com>'",
        )
        .await
        .unwrap();
        assert_eq!(contents(&engine).await, ["Redacted.", LAST], "{url}");
        for sql in [
            "DELETE FROM message_addresses WHERE message_id IN \
             (SELECT id FROM messages WHERE message_id = '<kim-3@example.com>')",
            "DELETE FROM messages WHERE message_id = '<kim-3@example.com>'",
        ] {
            db.execute_unprepared(sql).await.unwrap();
        }
        assert_eq!(stored(db).await.len(), 3, "{url}");
    }
}

#[tokio::test]
async fn erasing_a_correspondent_strips_the_messages_left_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = root("");
    const ANN: &str = "Ann Roe <ann@example.com>";
    for (url, _) in every_backend(dir.path(), "stored_strips_forget").await {
        let engine = engine(root.path(), &url).await;
        // Ann writes; support answers her with Kim in copy; Kim pastes Ann's mail below
        // her own. Once Ann is erased, with every message that names her, the paste is
        // Kim's own text: nothing stored is left to compare it with.
        let pasted = format!("Same here.\n\n{FIRST}");
        for m in [
            mail("ann-1", (ANN, "support@acme.test", ""), None, 0, FIRST),
            mail("reply-1", (SUPPORT, ANN, KIM), Some("ann-1"), 30, REPLY),
            mail(
                "kim-2",
                (KIM, "support@acme.test", ""),
                Some("reply-1"),
                40,
                &pasted,
            ),
        ] {
            ingest(&engine, m).await;
        }
        let db = engine.db().await.unwrap();
        assert_eq!(
            stored(db).await,
            [
                row("ann-1", None, 0),
                row("reply-1", None, 0),
                row("kim-2", Some("Same here."), removed(&pasted, "Same here.")),
            ],
            "{url}"
        );
        engine.forget("ann@example.com", false).await.unwrap();
        let want = [row("kim-2", None, 0)];
        assert_eq!(stored(db).await, want, "{url}");
        assert_eq!(walked(db).await, want, "{url}");
    }
}

/// A long thread is compared block by block (`STRIP_BLOCK` messages): a message with its
/// own block and the one before, whichever way it was stored or read.
#[tokio::test]
async fn a_long_thread_is_compared_block_by_block() {
    const B: usize = protege::db::strips::STRIP_BLOCK;
    let dir = tempfile::tempdir().unwrap();
    let root = root("limit = 3");
    let text = |i: usize| {
        format!(
            "Message {i} of the thread says something of its own about parcel {i}, nothing \
             that another message says."
        )
    };
    let body = |i: usize| match i {
        // A paste of message 0, one block back: removed.
        _ if i == B + 3 => format!("Reply.\n\n{}", text(0)),
        // A paste of message 1, two blocks back: not compared, stays.
        _ if i == 2 * B + 3 => format!("Reply.\n\n{}", text(1)),
        _ => text(i),
    };
    let messages: Vec<Value> = (0..2 * B + 5)
        .map(|i| {
            serde_json::json!({
                "message_id": format!("<m{i}@example.com>"),
                "direction": "inbound",
                "from": KIM,
                "to": ["support@acme.test"],
                "subject": "Order A-1042",
                "sent_at": format!("2026-03-10T{:02}:{:02}:00Z", i / 60, i % 60),
                "text_body": body(i),
            })
        })
        .collect();
    let fixture =
        serde_json::json!({"threads": [{"subject": "Order A-1042", "messages": messages}]});
    for (url, _) in every_backend(dir.path(), "stored_strips_blocks").await {
        let engine = engine(root.path(), &url).await;
        let db = engine.db().await.unwrap();
        protege::db::import_fixture_str(db, &fixture.to_string())
            .await
            .unwrap();
        // One more, stored alone: a paste of a message of the block before its own.
        let parent = format!("m{}", 2 * B + 4);
        let (last, _) = raw(
            "kim-9",
            Some(&parent),
            0,
            &format!("Reply.\n\n{}", text(B + 10)),
        );
        let last = last.replace("09:00:00 +0000", "23:00:00 +0000");
        engine
            .ingest_mail(last.as_bytes(), Some(Direction::Inbound))
            .await
            .unwrap();
        let rows = stored(db).await;
        assert_eq!(rows.len(), 2 * B + 6, "{url}");
        let text_of = |id: String| {
            rows.iter()
                .find(|r| r[0].as_str() == Some(id.as_str()))
                .map(|r| r[1].clone())
                .unwrap()
        };
        assert_eq!(
            text_of(format!("<m{}@example.com>", B + 3)),
            "Reply.",
            "{url}"
        );
        assert_eq!(
            text_of(format!("<m{}@example.com>", 2 * B + 3)),
            Value::Null,
            "{url}"
        );
        assert_eq!(text_of("<kim-9@example.com>".to_owned()), "Reply.", "{url}");
        // Storing it read the end of the thread alone; stripping the whole thread again
        // gives the same rows.
        let thread = protege::db::load_message(db, "<kim-9@example.com>")
            .await
            .unwrap()
            .unwrap()
            .thread_id;
        protege::db::strips::restrip(db, &[thread], &Default::default())
            .await
            .unwrap();
        assert_eq!(stored(db).await, rows, "{url}");
        // Read without rows: the same blocks.
        let input = ResolveInput::reply("support", format!("<m{}@example.com>", 2 * B + 4))
            .format(Format::Messages)
            .now("2026-03-11T00:00:00Z".parse().unwrap());
        let with_rows = engine.resolve(&input).await.unwrap().body;
        db.execute_unprepared("DELETE FROM message_strips")
            .await
            .unwrap();
        assert_eq!(
            engine.resolve(&input).await.unwrap().body,
            with_rows,
            "{url}"
        );
        let shown = with_rows["messages"].to_string();
        assert!(
            shown.contains(&format!("Reply.\\n\\n{}", text(1))),
            "{url}: {shown}"
        );
    }
}
