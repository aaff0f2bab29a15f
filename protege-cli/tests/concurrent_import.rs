//! Several `protege db import-eml` processes at once over overlapping mbox files
//! (several writers at once): every process exits 0 and each message is stored once, on
//! a fresh SQLite file and on the PostgreSQL / MariaDB servers named by
//! `PROTEGE_TEST_POSTGRES_URL` / `PROTEGE_TEST_MYSQL_URL`.

use std::path::Path;

use protege::db::sea_orm::{ConnectionTrait, EntityTrait, PaginatorTrait};
use protege::db::{self, entities::message};

mod common;
use common::protege_command;

const PROCESSES: usize = 4;

/// `url` with its database path replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let scheme_end = url.find("://").map_or(0, |i| i + 3);
    let path_start = url[scheme_end..]
        .find('/')
        .map_or(url.len(), |i| scheme_end + i);
    format!("{}/{name}", &url[..path_start])
}

/// Writes an mbox of messages `range` (threads of three: customer, support, customer).
fn write_mbox(path: &Path, range: std::ops::Range<usize>) {
    let mut text = String::new();
    for i in range {
        let (t, k) = (i / 3, i % 3);
        let from = if k == 1 {
            "Acme Support <support@acme.test>".to_owned()
        } else {
            format!("Customer {t} <c{t}@example.com>")
        };
        text.push_str(&format!(
            "From x@y Mon Jan  5 10:00:00 2026\nFrom: {from}\nTo: support@acme.test\n\
             Date: Mon, 5 Jan 2026 {:02}:{:02}:00 +0000\nSubject: Order {t}\nMessage-ID: <c{i}@example.com>\n",
            i / 60,
            i % 60
        ));
        if k > 0 {
            text.push_str(&format!("In-Reply-To: <c{}@example.com>\n", i - 1));
        }
        text.push_str("\nFrom what I see, the parcel is late.\n\n");
    }
    std::fs::write(path, text).unwrap();
}

async fn run_on(url: &str, dir: &Path) {
    let status = protege_command()
        .args(["--root"])
        .arg(dir)
        .args(["--database", url, "db", "migrate"])
        .env_remove("PROTEGE_DATABASE_URL")
        .status()
        .unwrap();
    assert!(status.success());
    let spawned: Vec<_> = (0..PROCESSES)
        .map(|k| {
            let (first, second) = if k % 2 == 0 {
                ("a.mbox", "b.mbox")
            } else {
                ("b.mbox", "a.mbox")
            };
            protege_command()
                .arg("--root")
                .arg(dir)
                .args(["--database", url, "db", "import-eml"])
                .arg(dir.join(first))
                .arg(dir.join(second))
                .env_remove("PROTEGE_DATABASE_URL")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut imported = 0;
    for child in spawned {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{url}: {stdout}{stderr}");
        assert_eq!(stderr, "", "{url}");
        let n: usize = stdout
            .strip_prefix("imported ")
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{url}: {stdout}"));
        imported += n;
    }
    let conn = db::connect(url).await.unwrap();
    assert_eq!(
        message::Entity::find().count(&conn).await.unwrap(),
        90,
        "{url}"
    );
    // Every message was stored by exactly one of the concurrent processes.
    assert_eq!(imported, 90, "{url}");
    conn.close().await.ok();
}

#[tokio::test]
async fn concurrent_imports_store_each_message_once() {
    let dir = tempfile::tempdir().unwrap();
    write_mbox(&dir.path().join("a.mbox"), 0..60);
    write_mbox(&dir.path().join("b.mbox"), 30..90);
    let sqlite = format!("sqlite://{}", dir.path().join("shared.db").display());
    run_on(&sqlite, dir.path()).await;
    for (var, mysql) in [
        ("PROTEGE_TEST_POSTGRES_URL", false),
        ("PROTEGE_TEST_MYSQL_URL", true),
    ] {
        let Ok(server) = std::env::var(var) else {
            continue;
        };
        if server.is_empty() {
            continue;
        }
        let name = format!("pt_concurrent_import_{}", std::process::id());
        let admin = db::connect(&server).await.unwrap();
        let (create, drop) = if mysql {
            (
                format!("CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"),
                format!("DROP DATABASE IF EXISTS `{name}`"),
            )
        } else {
            (
                format!("CREATE DATABASE \"{name}\""),
                format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"),
            )
        };
        admin.execute_unprepared(&drop).await.unwrap();
        admin.execute_unprepared(&create).await.unwrap();
        let url = with_database(&server, &name);
        let outcome = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(run_on(
            &url,
            dir.path(),
        )))
        .await;
        admin.execute_unprepared(&drop).await.ok();
        admin.close().await.ok();
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
    }
}
