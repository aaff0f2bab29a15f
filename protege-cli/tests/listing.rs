//! `protege db threads` and `protege db messages --thread ID` (and `Engine::threads`,
//! `Engine::thread_messages`): what is stored, listed, on every backend the environment
//! names.

use serde_json::{Value, json};

mod common;
use common::run_on as protege;
use common::server::every_backend;

const THREADS: &str = "\
thread  messages  last message (UTC)    subject
     1         3  2026-03-09T16:40:00Z  Refund for order A-1042
     6         2  2026-03-08T09:10:00Z  Weekly order export
     5         2  2026-03-07T12:00:00Z  Plan upgrade
     4         1  2026-03-06T14:20:00Z  Damaged label
     3         1  2026-03-05T11:00:00Z  Invoice address
     2         3  2026-03-04T10:05:00Z  Where is my parcel?
";

const MESSAGES: &str = "\
id  sent at (UTC)         direction  attachments  tool uses  from                              message id
 4  2026-03-03T08:00:00Z  inbound              0          2  Bob Okafor <bob@example.com>      <track-1@example.com>
 5  2026-03-03T08:30:00Z  outbound             0          0  Acme Support <support@acme.test>  <track-2@acme.test>
 6  2026-03-04T10:05:00Z  inbound              0          0  Bob Okafor <bob@example.com>      <track-3@example.com>
";

/// A thread whose two newest messages share their `sent_at`: the one stored later is
/// the newest.
const TIED: &str = r#"{"threads":[{"subject":"Tied","messages":[
  {"message_id":"<tie-1@example.com>","direction":"inbound","from":"Dan <dan@example.com>",
   "to":["support@acme.test"],"subject":"Tied","sent_at":"2026-04-01T10:00:00Z","text_body":"First."},
  {"message_id":"<tie-2@example.com>","direction":"inbound","from":"Dan <dan@example.com>",
   "to":["support@acme.test"],"subject":"Tied","sent_at":"2026-04-01T10:00:00Z","text_body":"Second."}]}]}"#;

#[tokio::test]
async fn threads_and_messages_are_listed_alike_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let urls = every_backend(dir.path(), "listing").await;
    let tied = dir.path().join("tied.json");
    std::fs::write(&tied, TIED).unwrap();
    for (url, _) in &urls {
        // An empty database lists nothing.
        let (code, stdout, stderr) = protege(url, &["db", "threads"]);
        assert_eq!(
            (code, stdout.as_str(), stderr.as_str()),
            (0, "thread  messages  last message (UTC)  subject\n", ""),
            "{url}"
        );
        assert_eq!(
            protege(url, &["db", "threads", "--format", "json"]),
            (0, "[]\n".to_owned(), String::new()),
            "{url}"
        );
        let (code, _, stderr) = protege(url, &["db", "import", "examples/data/demo.json"]);
        assert_eq!((code, stderr.as_str()), (0, ""), "{url}");
        assert_eq!(
            protege(url, &["db", "threads"]),
            (0, THREADS.to_owned(), String::new()),
            "{url}"
        );
        let (code, json, _) = protege(url, &["db", "threads", "--limit", "2", "--format", "json"]);
        assert_eq!(code, 0, "{url}");
        assert_eq!(
            serde_json::from_str::<Value>(&json).unwrap(),
            json!([
                {"thread": 1, "subject": "Refund for order A-1042", "messages": 3,
                 "last_message_id": "<refund-3@example.com>", "last_sent_at": "2026-03-09T16:40:00Z"},
                {"thread": 6, "subject": "Weekly order export", "messages": 2,
                 "last_message_id": "<export-2@acme.test>", "last_sent_at": "2026-03-08T09:10:00Z"}
            ]),
            "{url}"
        );
        assert_eq!(
            protege(url, &["db", "messages", "--thread", "2"]),
            (0, MESSAGES.to_owned(), String::new()),
            "{url}"
        );
        let (code, json, _) = protege(
            url,
            &["db", "messages", "--thread", "1", "--format", "json"],
        );
        assert_eq!(code, 0, "{url}");
        let first = &serde_json::from_str::<Value>(&json).unwrap()[0];
        assert_eq!(
            first,
            &json!({
                "id": 1, "message_id": "<refund-1@example.com>", "direction": "inbound",
                "from": "Alice Martin <alice@example.com>", "to": ["support@acme.test"], "cc": [],
                "subject": "Refund for order A-1042", "sent_at": "2026-03-02T09:14:00Z",
                "in_reply_to": null, "body_chars": 118,
                "attachments": [{"attachment_id": "att-refund-invoice",
                    "filename": "invoice-A-1042.pdf", "content_type": "application/pdf",
                    "byte_size": 175}],
                "tool_uses": 2
            }),
            "{url}"
        );
        // Ties of `sent_at` go to the message stored later.
        let (code, _, stderr) = protege(url, &["db", "import", &tied.display().to_string()]);
        assert_eq!((code, stderr.as_str()), (0, ""), "{url}");
        let (_, json, _) = protege(url, &["db", "threads", "--limit", "1", "--format", "json"]);
        assert_eq!(
            serde_json::from_str::<Value>(&json).unwrap(),
            json!([{"thread": 7, "subject": "Tied", "messages": 2,
                    "last_message_id": "<tie-2@example.com>", "last_sent_at": "2026-04-01T10:00:00Z"}]),
            "{url}"
        );
        // An unknown thread: one sentence, exit 1.
        assert_eq!(
            protege(url, &["db", "messages", "--thread", "99"]),
            (
                1,
                String::new(),
                "error: unknown thread `99`: no thread with this id in the database\n".to_owned()
            ),
            "{url}"
        );
    }
    for (_, server) in &urls {
        if let Some(server) = server {
            common::server::execute(server, "DROP DATABASE IF EXISTS listing").await;
        }
    }
}

/// A header stored with control characters (written before imports made headers one line,
/// or by hand) is printed on one line, so a stranger's subject cannot move the cursor.
#[test]
fn control_characters_in_stored_headers_stay_off_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let url = format!("sqlite://{}?mode=rwc", db.display());
    let project = common::project();
    let demo = project.join("examples/data/demo.json");
    assert_eq!(
        protege(&url, &["db", "import", &demo.display().to_string()]).0,
        0
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "UPDATE email_threads SET subject = 'Invoice\u{1b}[2J\naddress' WHERE id = 3",
        [],
    )
    .unwrap();
    conn.execute(
        "UPDATE messages SET from_address = 'Eve\r\n<eve@example.com>' WHERE id = 7",
        [],
    )
    .unwrap();
    let (code, stdout, _) = protege(&url, &["db", "threads"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("     3         1  2026-03-05T11:00:00Z  Invoice [2J address\n"),
        "{stdout}"
    );
    let (code, stdout, _) = protege(&url, &["db", "messages", "--thread", "3"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("  Eve <eve@example.com>  "), "{stdout}");
    assert!(
        !stdout.contains('\u{1b}') && !stdout.contains('\r'),
        "{stdout}"
    );
}

const LISTED: &str = "\
thread  direction  message id              file
     2  inbound    <refund-1@example.com>  protege-store/tests/data/eml/refund-1.eml
     2  outbound   <refund-2@acme.test>    protege-store/tests/data/eml/refund-2.eml
     2  inbound    <refund-3@example.com>  protege-store/tests/data/eml/refund-3.eml
     1  inbound    <plain-1@example.com>   protege-store/tests/data/eml/plain.eml
";

#[tokio::test]
async fn import_eml_lists_the_thread_of_each_message_it_stores_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let urls = every_backend(dir.path(), "import_list").await;
    let eml = |name: &str| format!("protege-store/tests/data/eml/{name}");
    for (url, _) in &urls {
        let files = [
            eml("refund-1.eml"),
            eml("refund-2.eml"),
            eml("refund-3.eml"),
            eml("plain.eml"),
            eml("garbage.eml"),
        ];
        let mut args = vec!["db", "import-eml", "--list"];
        args.extend(files.iter().map(String::as_str));
        // In file order, with the thread each joined (stored in date order: the older
        // plain message opened thread 1); a failure is reported after the list.
        assert_eq!(
            protege(url, &args),
            (
                1,
                LISTED.to_owned(),
                "failed: protege-store/tests/data/eml/garbage.eml: not an email: no header found\n\
                 error: imported 4 messages, skipped 0 duplicates, 1 failed\n"
                    .to_owned()
            ),
            "{url}"
        );
        // Nothing stored, nothing listed; without --list, the totals alone.
        let again = ["db", "import-eml", "--list", files[0].as_str()];
        assert_eq!(
            protege(url, &again),
            (
                0,
                "imported 0 messages, skipped 1 duplicate, 0 failed\n".to_owned(),
                String::new()
            ),
            "{url}"
        );
        let (_, stdout, _) = protege(url, &["db", "import-eml", &eml("forward.eml")]);
        assert_eq!(
            stdout,
            "imported 1 message, skipped 0 duplicates, 0 failed\n"
        );
        // The listed threads are those `db messages` shows.
        let (_, stdout, _) = protege(
            url,
            &["db", "messages", "--thread", "2", "--format", "json"],
        );
        let ids: Vec<String> = serde_json::from_str::<Value>(&stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["message_id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            ids,
            [
                "<refund-1@example.com>",
                "<refund-2@acme.test>",
                "<refund-3@example.com>"
            ]
        );
    }
}
