//! A running `protege serve` and the databases of the tests that speak to it over HTTP.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use super::{project, protege_command};

/// The bearer token the tests start `serve` with.
pub(crate) const TOKEN: &str = "s3cret-token";

/// `protege --root ROOT --database DB`, without the process's database URL and token.
pub(crate) fn protege(root: &Path, db: &str) -> Command {
    let mut cmd = protege_command();
    cmd.arg("--root")
        .arg(root)
        .arg("--database")
        .arg(db)
        .env_remove("PROTEGE_DATABASE_URL")
        .env_remove("PROTEGE_SERVE_TOKEN");
    cmd
}

/// A SQLite database holding the demo data (made by `protege demo`).
pub(crate) fn demo_db() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("demo.db").display());
    let out = protege(&project(), &url).arg("demo").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, url)
}

/// A running `protege serve`; killed when dropped.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) base: String,
    pub(crate) log: mpsc::Receiver<String>,
    pub(crate) client: reqwest::Client,
}

impl Server {
    pub(crate) fn start(root: &Path, db: &str, token: Option<&str>, extra: &[&str]) -> Server {
        Self::start_env(root, db, token, extra, &[])
    }

    /// [`Server::start`] with extra environment variables.
    pub(crate) fn start_env(
        root: &Path,
        db: &str,
        token: Option<&str>,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
        let mut cmd = protege(root, db);
        cmd.args(["serve", "--listen", "127.0.0.1:0"])
            .args(extra)
            .envs(env.iter().copied());
        if let Some(token) = token {
            cmd.env("PROTEGE_SERVE_TOKEN", token);
        }
        Self::spawn(cmd)
    }

    /// Spawns `cmd`, a `protege serve`, and waits until it listens.
    pub(crate) fn spawn(mut cmd: Command) -> Server {
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, log) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let base = loop {
            let line = log
                .recv_timeout(Duration::from_secs(60))
                .expect("serve did not start listening within 60 s");
            if let Some(at) = line.find("listening on http://") {
                let rest = &line[at + "listening on ".len()..];
                let end = rest
                    .find(|c: char| c == '"' || c.is_whitespace())
                    .unwrap_or(rest.len());
                break rest[..end].to_owned();
            }
        };
        Server {
            child,
            base,
            log,
            client: http_client(),
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub(crate) async fn get(&self, path: &str, token: Option<&str>) -> (u16, String) {
        let mut req = self.client.get(self.url(path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let res = req.send().await.unwrap();
        (res.status().as_u16(), res.text().await.unwrap())
    }

    pub(crate) async fn post(
        &self,
        path: &str,
        content_type: &str,
        body: impl Into<reqwest::Body>,
    ) -> (u16, String) {
        let res = self
            .client
            .post(self.url(path))
            .bearer_auth(TOKEN)
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.text().await.unwrap())
    }

    pub(crate) async fn resolve(&self, body: Value) -> (u16, String) {
        self.post("/v1/resolve", "application/json", body.to_string())
            .await
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP client of the tests. The process's TLS (rustls over ring, shared with the
/// agent's clients) needs its crypto provider installed before any client is built.
pub(crate) fn http_client() -> reqwest::Client {
    protege::agent::install_crypto_provider();
    reqwest::Client::new()
}

/// A fresh database on the server of `url` (PostgreSQL or MariaDB), for one test.
pub(crate) async fn fresh_server_db(url: &str, name: &str) -> String {
    use protege::db::sea_orm::ConnectionTrait as _;
    let conn = protege::db::sea_orm::Database::connect(url).await.unwrap();
    conn.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name}"))
        .await
        .unwrap();
    conn.execute_unprepared(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    let base = url.rsplit_once('/').unwrap().0;
    format!("{base}/{name}")
}

/// The database URLs of this run: a SQLite file in `dir`, and a fresh database on each
/// server named by the environment (with the server's own URL, to drop it at the end).
pub(crate) async fn every_backend(dir: &Path, name: &str) -> Vec<(String, Option<String>)> {
    let mut urls = vec![(
        format!("sqlite://{}?mode=rwc", dir.join("t.db").display()),
        None,
    )];
    for var in ["PROTEGE_TEST_POSTGRES_URL", "PROTEGE_TEST_MYSQL_URL"] {
        if let Some(server_url) = std::env::var(var).ok().filter(|u| !u.is_empty()) {
            let url = fresh_server_db(&server_url, name).await;
            urls.push((url, Some(server_url)));
        }
    }
    urls
}

pub(crate) async fn execute(url: &str, sql: &str) {
    use protege::db::sea_orm::ConnectionTrait as _;
    let conn = protege::db::sea_orm::Database::connect(url).await.unwrap();
    conn.execute_unprepared(sql).await.unwrap();
    conn.close().await.unwrap();
}
