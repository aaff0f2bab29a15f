// One file: the benchmark and its baselines (rusqlite, sqlx, Python) run interleaved and
// are compared in one run, so they live together.
//! ThreadHistory on the embedded SQLite against the baselines its goals are stated in:
//!
//! - a hand-written Rust read through the SQLite C library (rusqlite, one raw SQL query per
//!   table, the same messages built by hand): goal ≤ 1.5×;
//! - the plain Python program `benches/python_floor/baseline_sqlite.py` (standard library
//!   `sqlite3`) on the same fixture, run from this bench when `python3` is on the `PATH`:
//!   goal ≤ 0.5×;
//! - the same read hand-written through SeaORM's own driver (sqlx), for reference;
//! - the same `limit = 50` read in a 1,000,000-message database against a 10,000-message
//!   one: goal ≤ 1.3×.
//!
//! `cargo bench --bench thread_history` prints criterion's numbers and, from interleaved
//! runs, the median of each and the ratios. SQLite files in a temp dir.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use protege::db;
use protege_core::{
    AppConfig, Context, MailMessage, Message, PersonaInfo, Quoted, Resolver, Role, ThreadHistory,
    ToolCall, Trigger, message,
};
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement, Value as DbValue};
use serde_json::Value;

mod common;

use common::{CURRENT, PRIOR, reference_thread};

/// A database holding the reference thread among `total` messages in 10,000 threads.
async fn build(path: &std::path::Path, total: usize) -> DatabaseConnection {
    let conn = db::open(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    conn.execute_unprepared("PRAGMA journal_mode = WAL")
        .await
        .unwrap();
    let filler = total - PRIOR - 1;
    // Filler threads and messages, interleaved in time with the reference thread.
    conn.execute_unprepared(&format!(
        "BEGIN;
         INSERT INTO email_threads (subject, created_at)
           WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 10000)
           SELECT 'Filler ' || x, '2026-01-01T00:00:00+00:00' FROM c;
         INSERT INTO messages (email_thread_id, message_id, direction, from_address, to_addresses,
                               cc_addresses, subject, text_body, html_body, in_reply_to, sent_at)
           WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT {filler})
           SELECT 1 + x % 10000, '<f' || x || '@bench>', CASE x % 2 WHEN 0 THEN 'inbound' ELSE 'outbound' END,
                  'someone@example.com', '[\"support@acme.test\"]', '[]', 'Filler',
                  'A short filler body of a message in another thread, number ' || x, NULL, NULL,
                  strftime('%Y-%m-%dT%H:%M:%S+00:00', 1767225600 + (x * 7) % 60000, 'unixepoch')
           FROM c;
         COMMIT;"
    ))
    .await
    .unwrap();
    db::import_fixture_str(&conn, &reference_thread().to_string())
        .await
        .unwrap();
    conn.execute_unprepared("ANALYZE").await.unwrap();
    conn
}

fn context(conn: &DatabaseConnection, current: MailMessage) -> Context {
    Context::builder(
        PersonaInfo::new("bench"),
        AppConfig::new("."),
        Trigger::Message(current.into()),
    )
    .db(conn.clone())
    .build()
}

/// The sqlx baseline: one raw SQL query per table through SeaORM's driver, strings built
/// by hand.
async fn baseline(
    conn: &DatabaseConnection,
    current: &MailMessage,
    limit: Option<u64>,
) -> Vec<Message> {
    let backend = conn.get_database_backend();
    let limit_sql = limit.map_or(String::new(), |n| format!(" LIMIT {n}"));
    let rows = conn
        .query_all_raw(Statement::from_sql_and_values(
            backend,
            format!(
                "SELECT id, direction, from_address, to_addresses, cc_addresses, subject, sent_at, text_body \
                 FROM messages WHERE email_thread_id = ? AND sent_at <= ? AND id <> ? \
                 ORDER BY sent_at DESC, id DESC{limit_sql}"
            ),
            [
                DbValue::from(current.thread_id),
                DbValue::from(current.sent_at),
                DbValue::from(current.id),
            ],
        ))
        .await
        .unwrap();
    let ids: Vec<i64> = rows
        .iter()
        .map(|r| r.try_get_by_index(0).unwrap())
        .collect();
    let list = ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
    let attachments = conn
        .query_all_raw(Statement::from_string(
            backend,
            format!("SELECT message_id, attachment_id, filename, content_type, byte_size FROM attachments WHERE message_id IN ({list}) ORDER BY id"),
        ))
        .await
        .unwrap();
    assert!(attachments.is_empty());
    let uses = conn
        .query_all_raw(Statement::from_string(
            backend,
            format!("SELECT message_id, tool_call_id, name, input, result FROM tool_uses WHERE message_id IN ({list}) ORDER BY message_id, run_id, turn_index, position, id"),
        ))
        .await
        .unwrap();
    let mut out = Vec::with_capacity(rows.len() * 2);
    let mut u = 0;
    for row in rows.iter().rev() {
        let id: i64 = row.try_get_by_index(0).unwrap();
        let direction: String = row.try_get_by_index(1).unwrap();
        let from: String = row.try_get_by_index(2).unwrap();
        let to: Vec<String> =
            serde_json::from_str(&row.try_get_by_index::<String>(3).unwrap()).unwrap();
        let cc: Vec<String> =
            serde_json::from_str(&row.try_get_by_index::<String>(4).unwrap()).unwrap();
        let subject: String = row.try_get_by_index(5).unwrap();
        let sent_at: chrono::DateTime<chrono::Utc> = row.try_get_by_index(6).unwrap();
        let body: Option<String> = row.try_get_by_index(7).unwrap();
        let body = body.unwrap_or_default();
        let body = body.trim();
        let mut text = String::with_capacity(200 + body.len());
        text.push_str("From: ");
        text.push_str(&from);
        text.push_str("\nTo:");
        if !to.is_empty() {
            text.push(' ');
            text.push_str(&to.join(", "));
        }
        text.push_str("\nCc:");
        if !cc.is_empty() {
            text.push(' ');
            text.push_str(&cc.join(", "));
        }
        text.push_str("\nDate: ");
        text.push_str(&sent_at.format("%a, %-d %b %Y %H:%M:%S +0000").to_string());
        text.push_str("\nSubject: ");
        text.push_str(&subject);
        if !body.is_empty() {
            text.push_str("\n\n");
            text.push_str(body);
            let role = if direction == "inbound" {
                Role::User
            } else {
                Role::Assistant
            };
            out.push(message(role, text));
        }
        // Tool uses are ordered by message id; ids ascend with time in this thread.
        let start = u;
        while u < uses.len() && uses[u].try_get_by_index::<i64>(0).unwrap() == id {
            u += 1;
        }
        while u < uses.len() && uses[u].try_get_by_index::<i64>(0).unwrap() < id {
            u += 1;
        }
        if u > start {
            let round = &uses[start..u];
            let calls = round
                .iter()
                .map(|r| {
                    let input: Value =
                        serde_json::from_str(&r.try_get_by_index::<String>(3).unwrap()).unwrap();
                    ToolCall::new(
                        r.try_get_by_index::<String>(1).unwrap(),
                        r.try_get_by_index::<String>(2).unwrap(),
                        input,
                    )
                })
                .collect();
            out.push(message(Role::Assistant, "").with_tool_calls(calls));
            for r in round {
                let call_id: String = r.try_get_by_index(1).unwrap();
                let result: Option<String> = r.try_get_by_index(4).unwrap();
                let content = match result {
                    None => r#"{"error":"no result recorded"}"#.to_owned(),
                    Some(text) => match text.char_indices().nth(4_000) {
                        None => text,
                        Some((cut, _)) => format!(
                            "{}\n[truncated: {} more characters]",
                            &text[..cut],
                            text[cut..].chars().count()
                        ),
                    },
                };
                out.push(message(Role::Tool, content).with_tool_call_id(call_id));
            }
        }
    }
    out
}

/// Medians of `a` and `b` over `n` interleaved runs each.
fn interleaved(
    rt: &tokio::runtime::Runtime,
    n: usize,
    mut a: impl FnMut() -> Duration,
    mut b: impl FnMut() -> Duration,
) -> (Duration, Duration) {
    let _ = rt;
    let mut ta = Vec::with_capacity(n);
    let mut tb = Vec::with_capacity(n);
    for _ in 0..n {
        ta.push(a());
        tb.push(b());
    }
    ta.sort();
    tb.sort();
    (ta[n / 2], tb[n / 2])
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let small = rt.block_on(build(&dir.path().join("small.db"), 10_000));
    let big = rt.block_on(build(&dir.path().join("big.db"), 1_000_000));
    eprintln!(
        "setup: two databases in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let current_small = rt
        .block_on(db::load_message(&small, CURRENT))
        .unwrap()
        .unwrap();
    let current_big = rt
        .block_on(db::load_message(&big, CURRENT))
        .unwrap()
        .unwrap();
    let ctx_small = context(&small, current_small.clone());
    let ctx_big = context(&big, current_big);

    let limit50 = ThreadHistory::new();
    let all = ThreadHistory::new().limit(None);
    // The baseline builds exactly what the engine builds.
    for (h, limit, len) in [(&limit50, Some(50), 74), (&all, None, 1_501)] {
        let engine = rt.block_on(h.resolve(&ctx_small)).unwrap();
        let base = rt.block_on(baseline(&small, &current_small, limit));
        assert_eq!(engine.len(), len);
        assert_eq!(engine, base);
    }

    let mut group = c.benchmark_group("thread_history");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(4));
    group.bench_function("engine limit=50", |b| {
        b.iter(|| rt.block_on(limit50.resolve(&ctx_small)).unwrap())
    });
    group.bench_function("baseline limit=50", |b| {
        b.iter(|| rt.block_on(baseline(&small, &current_small, Some(50))))
    });
    group.bench_function("engine limit=all", |b| {
        b.iter(|| rt.block_on(all.resolve(&ctx_small)).unwrap())
    });
    group.bench_function("baseline limit=all", |b| {
        b.iter(|| rt.block_on(baseline(&small, &current_small, None)))
    });
    group.bench_function("engine limit=50, 1M-message db", |b| {
        b.iter(|| rt.block_on(limit50.resolve(&ctx_big)).unwrap())
    });
    group.finish();

    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed()
    };
    let (e50, b50) = interleaved(
        &rt,
        300,
        || time(&mut || drop(rt.block_on(limit50.resolve(&ctx_small)).unwrap())),
        || time(&mut || drop(rt.block_on(baseline(&small, &current_small, Some(50))))),
    );
    let (eall, ball) = interleaved(
        &rt,
        60,
        || time(&mut || drop(rt.block_on(all.resolve(&ctx_small)).unwrap())),
        || time(&mut || drop(rt.block_on(baseline(&small, &current_small, None)))),
    );
    let (big50, small50) = interleaved(
        &rt,
        300,
        || time(&mut || drop(rt.block_on(limit50.resolve(&ctx_big)).unwrap())),
        || time(&mut || drop(rt.block_on(limit50.resolve(&ctx_small)).unwrap())),
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("\nmedians of interleaved runs:");
    println!(
        "limit=50:  engine {:.3} ms, sqlx baseline {:.3} ms, ratio {:.2}x",
        ms(e50),
        ms(b50),
        ms(e50) / ms(b50)
    );
    println!(
        "limit=all: engine {:.3} ms, sqlx baseline {:.3} ms, ratio {:.2}x",
        ms(eall),
        ms(ball),
        ms(eall) / ms(ball)
    );
    println!(
        "limit=50:  1,000,000-message db {:.3} ms, 10,000-message db {:.3} ms, ratio {:.2}x (goal <= 1.3x)",
        ms(big50),
        ms(small50),
        ms(big50) / ms(small50)
    );

    floor(&rt, dir.path());
}

/// The C-library baseline: the same three reads through rusqlite, hand-written SQL, the
/// same messages built by hand.
fn c_baseline(
    conn: &rusqlite::Connection,
    current: &MailMessage,
    limit: Option<u64>,
) -> Vec<Message> {
    struct Row {
        id: i64,
        inbound: bool,
        from: String,
        to: Vec<String>,
        cc: Vec<String>,
        subject: String,
        sent_at: chrono::DateTime<chrono::Utc>,
        body: Option<String>,
    }
    let limit_sql = limit.map_or(String::new(), |n| format!(" LIMIT {n}"));
    let sent_at = current
        .sent_at
        .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false);
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT id, direction, from_address, to_addresses, cc_addresses, subject, sent_at, text_body \
             FROM messages WHERE email_thread_id = ?1 AND sent_at <= ?2 AND id <> ?3 \
             ORDER BY sent_at DESC, id DESC{limit_sql}"
        ))
        .unwrap();
    let mut rows: Vec<Row> = stmt
        .query_map(
            rusqlite::params![current.thread_id, sent_at, current.id],
            |r| {
                Ok(Row {
                    id: r.get(0)?,
                    inbound: r.get_ref(1)?.as_str()? == "inbound",
                    from: r.get(2)?,
                    to: serde_json::from_str(r.get_ref(3)?.as_str()?).unwrap(),
                    cc: serde_json::from_str(r.get_ref(4)?.as_str()?).unwrap(),
                    subject: r.get(5)?,
                    sent_at: chrono::DateTime::parse_from_rfc3339(r.get_ref(6)?.as_str()?)
                        .unwrap()
                        .to_utc(),
                    body: r.get(7)?,
                })
            },
        )
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    rows.reverse();
    let list = rows
        .iter()
        .map(|r| r.id.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let mut attachments: std::collections::HashMap<i64, Vec<String>> = Default::default();
    let mut stmt = conn
        .prepare(&format!(
            "SELECT message_id, attachment_id, filename, content_type, byte_size FROM attachments \
             WHERE message_id IN ({list}) ORDER BY id"
        ))
        .unwrap();
    let mut q = stmt.query([]).unwrap();
    while let Some(r) = q.next().unwrap() {
        let line = format!(
            "\n- {} ({}, {} bytes, id: {})",
            r.get_ref(2).unwrap().as_str().unwrap(),
            r.get_ref(3).unwrap().as_str().unwrap(),
            r.get::<_, i64>(4).unwrap(),
            r.get_ref(1).unwrap().as_str().unwrap(),
        );
        attachments.entry(r.get(0).unwrap()).or_default().push(line);
    }
    struct Use {
        message_id: i64,
        call_id: String,
        name: String,
        input: Value,
        result: Option<String>,
    }
    let mut stmt = conn
        .prepare(&format!(
            "SELECT message_id, tool_call_id, name, input, result FROM tool_uses \
             WHERE message_id IN ({list}) ORDER BY message_id, run_id, turn_index, position, id"
        ))
        .unwrap();
    let uses: Vec<Use> = stmt
        .query_map([], |r| {
            Ok(Use {
                message_id: r.get(0)?,
                call_id: r.get(1)?,
                name: r.get(2)?,
                input: serde_json::from_str(r.get_ref(3)?.as_str()?).unwrap(),
                result: r.get(4)?,
            })
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut out = Vec::with_capacity(rows.len() * 2);
    let mut u = 0;
    for row in rows {
        let body = row.body.as_deref().unwrap_or_default().trim();
        let atts = attachments.remove(&row.id);
        if !body.is_empty() || atts.is_some() {
            let mut text = String::with_capacity(200 + body.len());
            text.push_str("From: ");
            text.push_str(&row.from);
            text.push_str("\nTo:");
            if !row.to.is_empty() {
                text.push(' ');
                text.push_str(&row.to.join(", "));
            }
            text.push_str("\nCc:");
            if !row.cc.is_empty() {
                text.push(' ');
                text.push_str(&row.cc.join(", "));
            }
            use std::fmt::Write;
            let _ = write!(
                text,
                "\nDate: {}\nSubject: {}",
                row.sent_at.format("%a, %-d %b %Y %H:%M:%S +0000"),
                row.subject
            );
            if !body.is_empty() {
                text.push_str("\n\n");
                text.push_str(body);
            }
            if let Some(atts) = atts {
                text.push_str("\n\nAttachments:");
                for line in atts {
                    text.push_str(&line);
                }
            }
            let role = if row.inbound {
                Role::User
            } else {
                Role::Assistant
            };
            out.push(message(role, text));
        }
        // Tool uses come ordered by message id, and so do the rows here (ids ascend with time).
        while u < uses.len() && uses[u].message_id < row.id {
            u += 1;
        }
        let start = u;
        while u < uses.len() && uses[u].message_id == row.id {
            u += 1;
        }
        if u > start {
            let round = &uses[start..u];
            let calls = round
                .iter()
                .map(|r| ToolCall::new(&r.call_id, &r.name, r.input.clone()))
                .collect();
            out.push(message(Role::Assistant, "").with_tool_calls(calls));
            for r in round {
                let content = match &r.result {
                    None => r#"{"error":"no result recorded"}"#.to_owned(),
                    Some(text) => match text.char_indices().nth(4_000) {
                        None => text.clone(),
                        Some((cut, _)) => format!(
                            "{}\n[truncated: {} more characters]",
                            &text[..cut],
                            text[cut..].chars().count()
                        ),
                    },
                };
                out.push(message(Role::Tool, content).with_tool_call_id(&r.call_id));
            }
        }
    }
    out
}

const FLOOR_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/python_floor");

/// The Python floor's fixture (one thread of 1,000 prior messages and the current one),
/// or `None` with a message when `python3` cannot run the generator.
fn floor_fixture(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let out = dir.join("floor-fixture.json");
    let status = std::process::Command::new("python3")
        .arg(format!("{FLOOR_DIR}/gen_fixture.py"))
        .arg("-o")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() => Some(out),
        Ok(s) => {
            eprintln!("python floor skipped: gen_fixture.py exited with {s}");
            None
        }
        Err(e) => {
            eprintln!("python floor skipped: cannot run python3 ({e})");
            None
        }
    }
}

/// The Python floor's medians (`limit50`, `all`) in milliseconds on `fixture`.
fn python_floor(fixture: &std::path::Path, dir: &std::path::Path) -> Option<(f64, f64)> {
    let output = std::process::Command::new("python3")
        .arg(format!("{FLOOR_DIR}/baseline_sqlite.py"))
        .arg("--fixture")
        .arg(fixture)
        .arg("--db")
        .arg(dir.join("floor.db"))
        .args(["--seconds", "3"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let median = |case: &str| {
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["case"] == case)
            .and_then(|v| v["median_us"].as_f64())
            .map(|us| us / 1e3)
    };
    Some((median("limit50")?, median("all")?))
}

/// Engine, C-library baseline and Python floor on the same fixture, in one run.
fn floor(rt: &tokio::runtime::Runtime, dir: &std::path::Path) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (fixture, current_id) = match floor_fixture(dir) {
        Some(path) => {
            let text = std::fs::read_to_string(&path).unwrap();
            let json: Value = serde_json::from_str(&text).unwrap();
            let last = json["threads"][0]["messages"]
                .as_array()
                .unwrap()
                .last()
                .unwrap()["message_id"]
                .as_str()
                .unwrap()
                .to_owned();
            (text, last)
        }
        None => (reference_thread().to_string(), CURRENT.to_owned()),
    };
    let path = dir.join("floor-engine.db");
    let conn = rt.block_on(async {
        let conn = db::open(&format!("sqlite://{}", path.display()))
            .await
            .unwrap();
        db::import_fixture_str(&conn, &fixture).await.unwrap();
        conn
    });
    let current = rt
        .block_on(db::load_message(&conn, &current_id))
        .unwrap()
        .unwrap();
    let ctx = context(&conn, current.clone());
    let c = rusqlite::Connection::open(&path).unwrap();
    let limit50 = ThreadHistory::new();
    let all = ThreadHistory::new().limit(None);
    for (h, limit) in [(&limit50, Some(50)), (&all, None)] {
        let engine = rt.block_on(h.resolve(&ctx)).unwrap();
        assert_eq!(
            engine,
            c_baseline(&c, &current, limit),
            "the C baseline builds what the engine builds"
        );
    }
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed()
    };
    let (e50, c50) = interleaved(
        rt,
        400,
        || time(&mut || drop(rt.block_on(limit50.resolve(&ctx)).unwrap())),
        || time(&mut || drop(c_baseline(&c, &current, Some(50)))),
    );
    let (eall, call) = interleaved(
        rt,
        80,
        || time(&mut || drop(rt.block_on(all.resolve(&ctx)).unwrap())),
        || time(&mut || drop(c_baseline(&c, &current, None))),
    );
    println!("\nfloor fixture, medians of interleaved runs:");
    println!(
        "limit=50:  engine {:.3} ms, C-library baseline {:.3} ms, ratio {:.2}x (goal <= 1.5x)",
        ms(e50),
        ms(c50),
        ms(e50) / ms(c50)
    );
    println!(
        "limit=all: engine {:.3} ms, C-library baseline {:.3} ms, ratio {:.2}x (goal <= 1.5x)",
        ms(eall),
        ms(call),
        ms(eall) / ms(call)
    );
    // `[mail] quoted = "strip"` against `keep` on the same thread (goal <= 1.3x): every
    // body of the window stripped against the ones before it.
    let mut stripping = PersonaInfo::new("bench");
    stripping.mail.quoted = Quoted::Strip;
    let ctx_strip = Context::builder(
        stripping,
        AppConfig::new("."),
        Trigger::Message(current.clone().into()),
    )
    .db(conn.clone())
    .build();
    let (s50, k50) = interleaved(
        rt,
        400,
        || time(&mut || drop(rt.block_on(limit50.resolve(&ctx_strip)).unwrap())),
        || time(&mut || drop(rt.block_on(limit50.resolve(&ctx)).unwrap())),
    );
    let (sall, kall) = interleaved(
        rt,
        80,
        || time(&mut || drop(rt.block_on(all.resolve(&ctx_strip)).unwrap())),
        || time(&mut || drop(rt.block_on(all.resolve(&ctx)).unwrap())),
    );
    println!(
        "limit=50:  quoted = \"strip\" {:.3} ms, \"keep\" {:.3} ms, ratio {:.2}x (goal <= 1.3x)",
        ms(s50),
        ms(k50),
        ms(s50) / ms(k50)
    );
    println!(
        "limit=all: quoted = \"strip\" {:.3} ms, \"keep\" {:.3} ms, ratio {:.2}x (goal <= 1.3x)",
        ms(sall),
        ms(kall),
        ms(sall) / ms(kall)
    );
    match python_floor(&dir.join("floor-fixture.json"), dir) {
        Some((p50, pall)) => {
            println!(
                "limit=50:  engine {:.3} ms, Python floor {:.3} ms, ratio {:.2}x (goal <= 0.5x)",
                ms(e50),
                p50,
                ms(e50) / p50
            );
            println!(
                "limit=all: engine {:.3} ms, Python floor {:.3} ms, ratio {:.2}x (goal <= 0.5x)",
                ms(eall),
                pall,
                ms(eall) / pall
            );
        }
        None => println!("Python floor: skipped (python3 or its fixture is not available)"),
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
