//! Responsibilities on time (§19) from the command line, on every backend: `protege agent
//! due` lists the slots due at `--now`, `protege agent tick` fires each once as a job with
//! its slot, and two `protege serve --agent` processes fire a slot once between them.

use std::path::Path;
use std::time::{Duration, Instant};

use protege::db::sea_orm::{ConnectionTrait, Database};
use serde_json::{Value, json};

mod common;
use common::server::{Server, every_backend, protege};

const KEY: &str = "sk-test-schedule-key-0123456789";

/// The start of the `digest` persona: an agent whose provider is a closed loopback port,
/// so a job's run fails at once whatever the runtime does with it.
const AGENT: &str = r#"addresses = ["digest@acme.test"]

[model]
provider = "anthropic"
name = "claude-sonnet-4-5"
base_url = "http://127.0.0.1:9"
api_key_env = "PROTEGE_TEST_AGENT_KEY"

[agent]
provider_attempts = 1
max_attempts = 1
"#;

/// The `digest` persona: a daily digest in Paris (02:30, a time the night of 29 March 2026
/// skips) and a weekly one in New York that never catches up. `notes` has
/// responsibilities and no `[agent]`: nothing of it is ever due.
fn root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(
        root.path().join("personas/digest.toml"),
        format!(
            r#"{AGENT}
[[responsibilities]]
name = "daily"
schedule = "30 2 * * *"
timezone = "Europe/Paris"
to = ["team@acme.test"]
subject = "Open threads"

[[responsibilities]]
name = "weekly"
schedule = "0 9 * * 1"
timezone = "America/New_York"
catch_up = "none"

[[responsibility_resolvers]]
use = "OpenThreads"
"#
        ),
    )
    .unwrap();
    std::fs::write(
        root.path().join("personas/notes.toml"),
        "[[responsibilities]]\nname = \"daily\"\nschedule = \"* * * * *\"\n",
    )
    .unwrap();
    root
}

/// `protege agent ARGS`: (exit code, stdout, stderr).
fn agent(root: &Path, db: &str, args: &[&str]) -> (i32, String, String) {
    let out = protege(root, db)
        .arg("agent")
        .args(args)
        .env("PROTEGE_TEST_AGENT_KEY", KEY)
        .output()
        .expect("run protege");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    )
}

/// `agent due --now NOW`: its lines.
fn due(root: &Path, db: &str, now: &str) -> String {
    let (code, out, err) = agent(root, db, &["due", "--now", now]);
    assert_eq!((code, err.as_str()), (0, ""), "{db}");
    out
}

/// `agent tick --now NOW`: the jobs it fired, each as `(persona, slot_id is set,
/// message_id, state, created_at)`, and the ids of the jobs its worker ran.
fn tick(root: &Path, db: &str, now: &str) -> (Vec<Value>, Vec<i64>, Vec<i64>) {
    let (code, out, err) = agent(root, db, &["tick", "--now", now]);
    assert_eq!(code, 0, "{db}: {err}");
    let report: Value = serde_json::from_str(&out).expect("JSON");
    let fired = report["fired"].as_array().expect("fired").clone();
    let ids = fired.iter().map(|j| j["id"].as_i64().unwrap()).collect();
    let ran = report["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| j["job"].as_i64().unwrap())
        .collect();
    let shown = fired
        .iter()
        .map(|j| {
            json!([
                j["persona"],
                j["slot_id"].is_i64(),
                j["message_id"],
                j["created_at"]
            ])
        })
        .collect();
    (shown, ids, ran)
}

/// Every job's `(slot_id, message_id)` and every slot's `(id, persona, responsibility,
/// local_time)`, read from the database.
async fn stored(
    url: &str,
) -> (
    Vec<(Option<i64>, Option<i64>)>,
    Vec<(i64, String, String, String)>,
) {
    let conn = Database::connect(url).await.unwrap();
    let backend = conn.get_database_backend();
    let rows = conn
        .query_all_raw(protege::db::sea_orm::Statement::from_string(
            backend,
            "SELECT slot_id, message_id FROM agent_jobs ORDER BY id",
        ))
        .await
        .unwrap();
    let jobs = rows
        .iter()
        .map(|r| {
            (
                r.try_get::<Option<i64>>("", "slot_id").unwrap(),
                r.try_get::<Option<i64>>("", "message_id").unwrap(),
            )
        })
        .collect();
    let rows = conn
        .query_all_raw(protege::db::sea_orm::Statement::from_string(
            backend,
            "SELECT id, persona, responsibility, local_time FROM responsibility_slots ORDER BY id",
        ))
        .await
        .unwrap();
    let slots = rows
        .iter()
        .map(|r| {
            (
                r.try_get("", "id").unwrap(),
                r.try_get("", "persona").unwrap(),
                r.try_get("", "responsibility").unwrap(),
                r.try_get("", "local_time").unwrap(),
            )
        })
        .collect();
    conn.close().await.unwrap();
    (jobs, slots)
}

/// Drops the server database of `server` named `name`, if the URL is one.
async fn drop_server_db(server: Option<&str>, name: &str) {
    if let Some(server) = server {
        common::server::execute(server, &format!("DROP DATABASE IF EXISTS {name}")).await;
    }
}

#[tokio::test]
async fn due_lists_and_tick_fires_each_slot_once() {
    let dir = tempfile::tempdir().unwrap();
    let name = "pt_schedules_tick";
    for (url, server) in every_backend(dir.path(), name).await {
        let root = root();
        let root = root.path();
        // The agent's first look: nothing is due before it.
        assert_eq!(due(root, &url, "2026-03-28T12:00:00Z"), "", "{url}");
        // 02:30 does not happen in Paris that night; the slot is due at 03:00 CEST.
        let daily = "digest\tdaily\t2026-03-29T02:30 Europe/Paris\t2026-03-29T01:00:00Z\n";
        assert_eq!(due(root, &url, "2026-03-29T00:59:59Z"), "", "{url}");
        assert_eq!(due(root, &url, "2026-03-29T01:00:30Z"), daily, "{url}");
        // Listing fires nothing.
        assert_eq!(due(root, &url, "2026-03-29T01:00:30Z"), daily, "{url}");
        let (fired, ids, ran) = tick(root, &url, "2026-03-29T01:00:30Z");
        assert_eq!(
            fired,
            [json!(["digest", true, null, "2026-03-29T01:00:30Z"])],
            "{url}"
        );
        // The worker ran the job in the foreground, whatever became of it.
        assert_eq!(ran, ids, "{url}");
        // Fired once: a second tick, or a listing, finds nothing due.
        let (again, _, _) = tick(root, &url, "2026-03-29T01:00:40Z");
        assert_eq!(again, Vec::<Value>::new(), "{url}");
        assert_eq!(due(root, &url, "2026-03-29T01:01:00Z"), "", "{url}");
        let (jobs, slots) = stored(&url).await;
        assert_eq!(
            slots
                .iter()
                .map(|s| (s.1.as_str(), s.2.as_str(), s.3.as_str()))
                .collect::<Vec<_>>(),
            [("digest", "daily", "2026-03-29T02:30")],
            "{url}"
        );
        assert_eq!(jobs, [(Some(slots[0].0), None)], "{url}");
        // Monday 09:00 in New York is on time at 13:00:20 UTC, missed five minutes later;
        // the daily digest's newest missed slot is due either way.
        let monday = "digest\tdaily\t2026-03-30T02:30 Europe/Paris\t2026-03-30T00:30:00Z\n\
                      digest\tweekly\t2026-03-30T09:00 America/New_York\t2026-03-30T13:00:00Z\n";
        assert_eq!(due(root, &url, "2026-03-30T13:00:20Z"), monday, "{url}");
        assert_eq!(
            due(root, &url, "2026-03-30T13:05:00Z"),
            "digest\tdaily\t2026-03-30T02:30 Europe/Paris\t2026-03-30T00:30:00Z\n",
            "{url}"
        );
        drop_server_db(server.as_deref(), name).await;
    }
}

#[test]
fn now_must_be_an_rfc_3339_timestamp() {
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
    let (code, out, err) = agent(root.path(), &url, &["due", "--now", "tomorrow"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(
        err.starts_with(
            "error: invalid value 'tomorrow' for '--now <RFC3339>': `tomorrow` is not an RFC 3339 timestamp such as 2026-01-05T10:00:00Z\n"
        ),
        "{err}"
    );
}

/// The responsibility of the replicas' test: a slot every minute.
const EVERY_MINUTE: &str = r#"
[[responsibilities]]
name = "minutely"
schedule = "* * * * *"

[[responsibility_resolvers]]
use = "OpenThreads"
"#;

#[tokio::test]
async fn two_serving_replicas_fire_each_slot_once() {
    let dir = tempfile::tempdir().unwrap();
    let name = "pt_schedules_serve";
    for (url, server) in every_backend(dir.path(), name).await {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("personas")).unwrap();
        std::fs::write(
            root.path().join("personas/digest.toml"),
            format!("{AGENT}{EVERY_MINUTE}"),
        )
        .unwrap();
        // Seen ten minutes ago: the newest minute's slot is due as soon as a replica looks.
        let seen = (chrono::Utc::now() - chrono::Duration::minutes(10)).to_rfc3339();
        assert_eq!(due(root.path(), &url, &seen), "", "{url}");
        let env = [("PROTEGE_TEST_AGENT_KEY", KEY)];
        let replicas = [
            Server::start_env(root.path(), &url, None, &["--agent"], &env),
            Server::start_env(root.path(), &url, None, &["--agent"], &env),
        ];
        // Within a few ticks (5 s apart) a slot fired.
        let deadline = Instant::now() + Duration::from_secs(30);
        let fired = loop {
            let (jobs, _) = stored(&url).await;
            if !jobs.is_empty() || Instant::now() > deadline {
                break !jobs.is_empty();
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        assert!(fired, "{url}: no slot fired in 30 s");
        // Two more ticks of each replica, then both stop: nothing was fired twice.
        tokio::time::sleep(Duration::from_secs(11)).await;
        // A replica that found a slot fired by the other said nothing of it.
        let failures: Vec<String> = replicas
            .iter()
            .flat_map(|r| r.log.try_iter())
            .filter(|line| line.contains("could not be fired"))
            .collect();
        drop(replicas);
        assert_eq!(failures, Vec::<String>::new(), "{url}");
        let (jobs, slots) = stored(&url).await;
        // One job per slot, each slot its own minute (a minute may have begun meanwhile).
        let mut minutes: Vec<&str> = slots.iter().map(|s| s.3.as_str()).collect();
        minutes.dedup();
        assert_eq!(minutes.len(), slots.len(), "{url}");
        assert!((1..=2).contains(&slots.len()), "{url}: {slots:?}");
        assert_eq!(
            jobs,
            slots.iter().map(|s| (Some(s.0), None)).collect::<Vec<_>>(),
            "{url}"
        );
        drop_server_db(server.as_deref(), name).await;
    }
}

#[test]
fn check_points_at_a_bad_time_zone_and_a_bad_schedule() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(
        root.path().join("personas/digest.toml"),
        "[[responsibilities]]\nname = \"daily\"\nschedule = \"30 2 * * 8\"\ntimezone = \"Europe/Pari\"\ncatch_up = \"every\"\n",
    )
    .unwrap();
    let out = common::protege_command()
        .arg("--root")
        .arg(root.path())
        .args(["check", "--no-env"])
        .env_remove("PROTEGE_DATABASE_URL")
        .output()
        .expect("run protege");
    let err = String::from_utf8(out.stderr)
        .unwrap()
        .replace(&root.path().display().to_string(), "ROOT");
    let headlines: Vec<&str> = err.lines().filter(|l| l.starts_with("ROOT/")).collect();
    assert_eq!(
        (out.status.code(), headlines),
        (
            Some(1),
            vec![
                "ROOT/personas/digest.toml:3:12: error: invalid schedule `30 2 * * 8`: number out of bounds",
                "ROOT/personas/digest.toml:4:12: error: unknown time zone `Europe/Pari`, did you mean `Europe/Paris`?",
                "ROOT/personas/digest.toml:5:12: error: unknown `catch_up` value `every`, expected `latest`, `all` or `none`",
            ]
        )
    );
}
