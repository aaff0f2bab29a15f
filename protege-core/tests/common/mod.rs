//! Shared helpers of the database tests: one fresh database per test on every configured
//! backend (SQLite always; PostgreSQL and MySQL/MariaDB when `PROTEGE_TEST_POSTGRES_URL` /
//! `PROTEGE_TEST_MYSQL_URL` are set), plus contexts and JSON helpers. The tests of
//! `protege-store` include this module too (`#[path]`), with its fixtures.
#![allow(dead_code)]

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::FutureExt as _;
use protege::db;
use protege_core::{AppConfig, Chain, Context, DynChain, Message, PersonaInfo, Trigger};
use sea_orm::{ConnectionTrait, DatabaseConnection};

/// A backend the suite runs on.
#[derive(Debug, Clone)]
pub(crate) struct Backend {
    /// `sqlite`, `postgres` or `mysql`.
    pub(crate) name: &'static str,
    /// The server URL (for the server backends).
    server: Option<String>,
}

/// SQLite, plus the servers named by the environment.
pub(crate) fn backends() -> Vec<Backend> {
    let mut out = vec![Backend {
        name: "sqlite",
        server: None,
    }];
    if let Ok(url) = std::env::var("PROTEGE_TEST_POSTGRES_URL")
        && !url.is_empty()
    {
        out.push(Backend {
            name: "postgres",
            server: Some(url),
        });
    }
    if let Ok(url) = std::env::var("PROTEGE_TEST_MYSQL_URL")
        && !url.is_empty()
    {
        out.push(Backend {
            name: "mysql",
            server: Some(url),
        });
    }
    out
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

fn unique_name(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut name: String = test
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(30)
        .collect();
    name = format!(
        "pt_{name}_{}_{}_{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    name
}

/// `url` with its database path replaced by `name`.
pub(crate) fn with_database(url: &str, name: &str) -> String {
    let scheme_end = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[scheme_end..];
    let path_start = rest.find('/').map_or(url.len(), |i| scheme_end + i);
    let query = url[path_start..]
        .find('?')
        .map(|i| &url[path_start + i..])
        .unwrap_or("");
    format!("{}/{name}{query}", &url[..path_start])
}

impl Backend {
    /// Creates a fresh, migrated database; returns it with what `drop_database` needs.
    pub(crate) async fn create(&self, test: &str) -> (DatabaseConnection, Option<String>) {
        match &self.server {
            None => {
                let conn = db::open("sqlite::memory:").await.expect("sqlite memory");
                (conn, None)
            }
            Some(server) => {
                let name = unique_name(test);
                let admin = db::connect(server).await.expect("test server");
                let sql = if self.name == "mysql" {
                    format!("CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
                } else {
                    format!("CREATE DATABASE \"{name}\"")
                };
                admin
                    .execute_unprepared(&sql)
                    .await
                    .expect("create database");
                admin.close().await.ok();
                let conn = db::open(&with_database(server, &name))
                    .await
                    .expect("fresh database");
                (conn, Some(name))
            }
        }
    }

    /// Drops a database made by `create`.
    pub(crate) async fn drop_database(&self, name: Option<String>) {
        let (Some(server), Some(name)) = (&self.server, name) else {
            return;
        };
        let admin = db::connect(server).await.expect("test server");
        let sql = if self.name == "mysql" {
            format!("DROP DATABASE IF EXISTS `{name}`")
        } else {
            format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")
        };
        admin.execute_unprepared(&sql).await.ok();
        admin.close().await.ok();
    }

    /// A URL of a fresh database (for tests that connect themselves); drop it with
    /// `drop_database`.
    pub(crate) async fn fresh_url(
        &self,
        test: &str,
        dir: &std::path::Path,
    ) -> (String, Option<String>) {
        match &self.server {
            None => (
                format!(
                    "sqlite://{}",
                    dir.join(format!("{}.db", unique_name(test))).display()
                ),
                None,
            ),
            Some(server) => {
                let (conn, name) = self.create(test).await;
                conn.close().await.ok();
                let name = name.expect("server database name");
                (with_database(server, &name), Some(name))
            }
        }
    }
}

/// Runs `body` once per backend on a fresh migrated database, dropping it afterwards
/// (also when the body panics).
pub(crate) async fn on_each_backend<F, Fut>(test: &str, body: F)
where
    F: Fn(DatabaseConnection, &'static str) -> Fut,
    Fut: Future<Output = ()>,
{
    for backend in backends() {
        let (conn, name) = backend.create(test).await;
        let outcome = AssertUnwindSafe(body(conn.clone(), backend.name))
            .catch_unwind()
            .await;
        conn.close().await.ok();
        backend.drop_database(name).await;
        if let Err(panic) = outcome {
            eprintln!("test `{test}` failed on backend `{}`", backend.name);
            std::panic::resume_unwind(panic);
        }
    }
}

/// The `tests/` folder of `protege-core`, whichever package's tests include this module.
const TESTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../protege-core/tests");

/// Imports a fixture file of `protege-core/tests/fixtures/`.
pub(crate) async fn import(db: &DatabaseConnection, file: &str) {
    let path = format!("{TESTS}/fixtures/{file}");
    let text = std::fs::read_to_string(&path).expect("fixture file");
    db::import_fixture_str(db, &text).await.expect("import");
}

/// Reads a file of `protege-core/tests/expected/`.
pub(crate) fn expected(file: &str) -> serde_json::Value {
    let path = format!("{TESTS}/expected/{file}");
    serde_json::from_str(&std::fs::read_to_string(&path).expect("expected file")).expect("json")
}

/// The support persona of the acceptance cases.
pub(crate) fn support_persona() -> PersonaInfo {
    let mut p = PersonaInfo::new("support");
    p.instructions = "You are Acme's support agent. Answer briefly and politely.".into();
    p.addresses = vec!["support@acme.test".into()];
    p
}

/// A reply-run context for the stored message `message_id`.
pub(crate) async fn reply_ctx(db: &DatabaseConnection, message_id: &str) -> Context {
    let m = db::load_message(db, message_id)
        .await
        .expect("load")
        .unwrap_or_else(|| panic!("message {message_id} not stored"));
    Context::builder(
        support_persona(),
        AppConfig::new("."),
        Trigger::Message(m.into()),
    )
    .now("2026-07-01T12:00:00Z".parse().unwrap())
    .db(db.clone())
    .build()
}

/// Runs `chain` in `ctx` and returns its messages as JSON.
pub(crate) async fn resolve_json(chain: &DynChain, ctx: &Context) -> serde_json::Value {
    let messages: Vec<Message> = chain.resolve(ctx).await.expect("resolve");
    serde_json::to_value(&messages).unwrap()
}
