//! `--read-database`: the reads of a resolve go to a read replica, a message the replica
//! does not have yet is read from the primary, a replica that is down is left alone, and
//! writes and migrations never reach it. The "replica" of these tests is a second database
//! that differs from the primary on purpose, so each answer shows where it was read.

use std::time::Duration;

use protege::db::sea_orm::{ConnectionTrait as _, Database, Statement};
use serde_json::json;

mod common;
use common::project;
use common::server::{Server, TOKEN, execute, fresh_server_db, protege};

const NOW: &str = "2026-03-10T08:00:00Z";

/// `<refund-3@example.com>` is Alice's mail; the primary says her plan is `pro`.
const ALICE_ON_PRIMARY: &str = "plan pro";
/// What the replica says of her instead.
const ALICE_ON_REPLICA: &str = "plan replica-plan";

/// Fills `url` with the demo data (`protege demo`: migrations, mail, customers).
fn demo_into(url: &str) {
    let out = protege(&project(), url).arg("demo").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A reply from Alice to the demo thread of `<refund-3@example.com>`.
fn alice_reply(id: &str) -> String {
    format!(
        "Message-ID: {id}\r\nFrom: Alice Martin <alice@example.com>\r\nTo: support@acme.test\r\nSubject: Re: Refund\r\nDate: Tue, 10 Mar 2026 09:00:00 +0000\r\nIn-Reply-To: <refund-3@example.com>\r\nReferences: <refund-3@example.com>\r\n\r\nAny news?\r\n"
    )
}

/// The request of a resolve of `message_id` for `support`, as text.
async fn resolved(server: &Server, message_id: &str) -> String {
    let (status, text) = server
        .resolve(json!({"persona": "support", "message_id": message_id, "now": NOW}))
        .await;
    assert_eq!(status, 200, "{text}");
    text
}

/// The value of `protege_replica_fallbacks_total` in `/metrics` (`None` when absent).
async fn fallbacks(server: &Server) -> Option<u64> {
    let (status, text) = server.get("/metrics", Some(TOKEN)).await;
    assert_eq!(status, 200, "{text}");
    text.lines()
        .find_map(|line| line.strip_prefix("protege_replica_fallbacks_total "))
        .map(|n| n.trim().parse().unwrap())
}

/// How many messages with `message_id` the database of `url` holds.
async fn stored(url: &str, message_id: &str) -> i64 {
    let conn = Database::connect(url).await.unwrap();
    let row = conn
        .query_one_raw(Statement::from_string(
            conn.get_database_backend(),
            format!("SELECT COUNT(*) AS n FROM messages WHERE message_id = '{message_id}'"),
        ))
        .await
        .unwrap()
        .unwrap();
    let n: i64 = row.try_get("", "n").unwrap();
    conn.close().await.unwrap();
    n
}

/// The checks of one primary and its "replica" (both filled with the demo data, the
/// replica's record of Alice changed), served with the arguments `extra` and the
/// environment `env`.
async fn reads_and_fallbacks(
    what: &str,
    primary: &str,
    replica: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) {
    demo_into(primary);
    demo_into(replica);
    execute(
        replica,
        "UPDATE customers SET plan = 'replica-plan' WHERE email = 'alice@example.com'",
    )
    .await;
    let server = Server::start_env(&project(), primary, Some(TOKEN), extra, env);

    // The replica answers /readyz, and the record is the replica's.
    assert_eq!(
        server.get("/readyz", None).await,
        (200, r#"{"status":"ready","read_replica":"up"}"#.to_owned()),
        "{what}"
    );
    let text = resolved(&server, "<refund-3@example.com>").await;
    assert!(
        text.contains(ALICE_ON_REPLICA) && !text.contains(ALICE_ON_PRIMARY),
        "{what}: the resolve did not read the replica: {text}"
    );
    assert_eq!(fallbacks(&server).await, Some(0), "{what}");

    // A mail posted now is stored on the primary only, and resolves at once: from the
    // primary, whose record says `pro`.
    let (status, text) = server
        .post(
            "/v1/mail",
            "message/rfc822",
            alice_reply("<replica-1@example.com>"),
        )
        .await;
    assert_eq!(status, 201, "{what}: {text}");
    let text = resolved(&server, "<replica-1@example.com>").await;
    assert!(
        text.contains(ALICE_ON_PRIMARY) && text.contains("Any news?"),
        "{what}: the new mail did not resolve from the primary: {text}"
    );
    assert_eq!(fallbacks(&server).await, Some(1), "{what}");
    assert_eq!(
        (
            stored(primary, "<replica-1@example.com>").await,
            stored(replica, "<replica-1@example.com>").await
        ),
        (1, 0),
        "{what}: the write reached the replica"
    );

    // An unknown message is still 404, after a look at both databases.
    let (status, text) = server
        .resolve(json!({"persona": "support", "message_id": "<nowhere@example.com>"}))
        .await;
    assert_eq!(status, 404, "{what}: {text}");
    assert_eq!(fallbacks(&server).await, Some(2), "{what}");
}

#[tokio::test]
async fn reads_go_to_the_replica_and_new_mail_to_the_primary_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let primary = format!("sqlite://{}", dir.path().join("primary.db").display());
    let replica = format!("sqlite://{}", dir.path().join("replica.db").display());
    reads_and_fallbacks(
        "sqlite",
        &primary,
        &replica,
        &["--read-database", &replica],
        &[],
    )
    .await;
}

#[tokio::test]
async fn reads_go_to_the_replica_and_new_mail_to_the_primary_on_servers() {
    for var in ["PROTEGE_TEST_POSTGRES_URL", "PROTEGE_TEST_MYSQL_URL"] {
        let Some(server_url) = std::env::var(var).ok().filter(|u| !u.is_empty()) else {
            continue;
        };
        let pid = std::process::id();
        let primary = fresh_server_db(&server_url, &format!("pt_primary_{pid}")).await;
        let replica = fresh_server_db(&server_url, &format!("pt_replica_{pid}")).await;
        // The environment variable this time.
        reads_and_fallbacks(
            var,
            &primary,
            &replica,
            &[],
            &[("PROTEGE_READ_DATABASE_URL", &replica)],
        )
        .await;
        for name in [format!("pt_primary_{pid}"), format!("pt_replica_{pid}")] {
            execute(&server_url, &format!("DROP DATABASE IF EXISTS {name}")).await;
        }
    }
}

/// A loopback port nothing listens on.
fn dead_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn a_replica_that_is_down_leaves_the_reads_to_the_primary() {
    let dir = tempfile::tempdir().unwrap();
    let primary = format!("sqlite://{}", dir.path().join("primary.db").display());
    demo_into(&primary);
    let replica = format!("postgres://postgres@127.0.0.1:{}/replica", dead_port());
    let server = Server::start(
        &project(),
        &primary,
        Some(TOKEN),
        &["--read-database", &replica],
    );
    for _ in 0..3 {
        let text = resolved(&server, "<refund-3@example.com>").await;
        assert!(text.contains(ALICE_ON_PRIMARY), "{text}");
    }
    let (status, text) = server
        .post(
            "/v1/mail",
            "message/rfc822",
            alice_reply("<down-1@example.com>"),
        )
        .await;
    assert_eq!(status, 201, "{text}");
    resolved(&server, "<down-1@example.com>").await;
    assert_eq!(
        server.get("/readyz", None).await,
        (
            200,
            r#"{"status":"ready","read_replica":"down"}"#.to_owned()
        )
    );
    assert_eq!(fallbacks(&server).await, Some(4));
    // Every resolve answered.
    let (_, metrics) = server.get("/metrics", Some(TOKEN)).await;
    assert!(
        metrics.contains(r#"protege_http_requests_total{route="/v1/resolve",status="200"} 4"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_replica_is_never_migrated_and_its_failures_fall_back() {
    let dir = tempfile::tempdir().unwrap();
    let primary = format!("sqlite://{}", dir.path().join("primary.db").display());
    demo_into(&primary);
    // An empty database: every read fails there, and nothing may create its tables.
    let replica_file = dir.path().join("empty.db");
    let replica = format!("sqlite://{}?mode=rwc", replica_file.display());
    let server = Server::start(
        &project(),
        &primary,
        Some(TOKEN),
        &["--read-database", &replica],
    );
    for _ in 0..2 {
        let text = resolved(&server, "<refund-3@example.com>").await;
        assert!(text.contains(ALICE_ON_PRIMARY), "{text}");
        // The replica is marked down after its failure, then up once it answers a ping.
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
    assert_eq!(fallbacks(&server).await, Some(2));
    let conn = Database::connect(&replica).await.unwrap();
    let tables = conn
        .query_all_raw(Statement::from_string(
            conn.get_database_backend(),
            "SELECT name FROM sqlite_master WHERE type = 'table'",
        ))
        .await
        .unwrap();
    assert!(tables.is_empty(), "the replica was written to");
}

#[tokio::test]
async fn without_a_replica_readyz_and_metrics_say_nothing_of_one() {
    let dir = tempfile::tempdir().unwrap();
    let primary = format!("sqlite://{}", dir.path().join("primary.db").display());
    demo_into(&primary);
    // Set but empty is unset.
    let server = Server::start_env(
        &project(),
        &primary,
        Some(TOKEN),
        &[],
        &[("PROTEGE_READ_DATABASE_URL", "")],
    );
    resolved(&server, "<refund-3@example.com>").await;
    assert_eq!(
        server.get("/readyz", None).await,
        (200, r#"{"status":"ready"}"#.to_owned())
    );
    assert_eq!(fallbacks(&server).await, None);
}
