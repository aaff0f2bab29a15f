//! Importing a generated mbox into a SQLite file, and into a PostgreSQL database when
//! `PROTEGE_TEST_POSTGRES_URL` names a server where the user may create databases:
//! `import_eml_paths` against a hand-written baseline doing the same reads and writes
//! (stream, parse with `mail-parser`, look up the parent, insert thread, message and
//! attachments in one savepoint per message, a commit every 256 messages), plus the peak
//! memory at two mbox sizes.
//!
//! `cargo bench -p protege-store --bench eml_import` prints, before criterion's own
//! report (SQLite), one line per backend and size: messages, time, messages per second of
//! the engine and of the baseline, the engine/baseline time ratio, and the peak resident
//! memory of the engine's import (VmHWM after resetting it). Each 10,000-message figure is
//! the median of three runs; the 50,000-message one shows that memory stays flat.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};
use mail_parser::mailbox::mbox::MessageIterator;
use mail_parser::{MessageParser, MimeHeaders};
use protege::db::{self, EmlOptions, import_eml_paths};
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, Statement,
    TransactionTrait, Value,
};

/// Messages per generated thread.
const THREAD_LEN: usize = 5;

/// Writes an mbox of `n` messages: threads of five, alternating customer and support,
/// each reply with In-Reply-To and References, ~1 KB bodies, every tenth message with a
/// 2 KB attachment.
fn generate_mbox(path: &Path, n: usize) {
    let mut out = BufWriter::new(File::create(path).expect("create mbox"));
    let paragraph = "The parcel arrived with a dented corner and the lid does not close. \
                     Could you send a replacement or tell me how to return it? "
        .repeat(7);
    let attachment: String = {
        let bytes: Vec<u8> = (0..1536u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut s = String::new();
        for chunk in bytes.chunks(57) {
            let _ = writeln!(
                s,
                "{}",
                base64::Engine::encode(&base64::engine::general_purpose::STANDARD, chunk)
            );
        }
        s
    };
    for i in 0..n {
        let (t, k) = (i / THREAD_LEN, i % THREAD_LEN);
        let minute = i % 60;
        let hour = (i / 60) % 24;
        let day = 1 + (i / 1440) % 28;
        let (from, to) = if k % 2 == 0 {
            (
                format!("Customer {t} <c{t}@example.com>"),
                "Acme Support <support@acme.test>".to_owned(),
            )
        } else {
            (
                "Acme Support <support@acme.test>".to_owned(),
                format!("Customer {t} <c{t}@example.com>"),
            )
        };
        let mut m = String::with_capacity(4096);
        let _ = writeln!(m, "From c{t}@example.com Mon Jan  5 10:00:00 2026");
        let _ = writeln!(m, "From: {from}\nTo: {to}");
        let _ = writeln!(
            m,
            "Date: {day} Jan 2026 {hour:02}:{minute:02}:00 +0000\nMessage-ID: <m{t}-{k}@bench.test>"
        );
        let re = if k == 0 { "" } else { "Re: " };
        let _ = writeln!(m, "Subject: {re}Order {t} damaged");
        if k > 0 {
            let refs: Vec<String> = (0..k).map(|j| format!("<m{t}-{j}@bench.test>")).collect();
            let _ = writeln!(
                m,
                "In-Reply-To: <m{t}-{}@bench.test>\nReferences: {}",
                k - 1,
                refs.join(" ")
            );
        }
        if i % 10 == 9 {
            let _ = write!(
                m,
                "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n--B\n\
                 Content-Type: text/plain; charset=utf-8\n\n{paragraph}\n--B\n\
                 Content-Type: application/octet-stream; name=\"scan{i}.bin\"\n\
                 Content-Disposition: attachment; filename=\"scan{i}.bin\"\n\
                 Content-Transfer-Encoding: base64\n\n{attachment}--B--\n\n"
            );
        } else {
            let _ = write!(
                m,
                "Content-Type: text/plain; charset=utf-8\n\n{paragraph}\n\n"
            );
        }
        out.write_all(m.as_bytes()).expect("write mbox");
    }
    out.flush().expect("flush mbox");
}

fn options() -> EmlOptions {
    EmlOptions::new(
        vec!["support@acme.test".into()],
        "2026-07-01T12:00:00Z".parse().unwrap(),
    )
}

async fn fresh_db(dir: &Path, name: &str) -> DatabaseConnection {
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    db::open(&format!("sqlite://{}", path.display()))
        .await
        .expect("sqlite file")
}

/// Where the report imports: a SQLite file, or a fresh database on a PostgreSQL server.
enum Target {
    Sqlite,
    Postgres(String),
}

impl Target {
    fn name(&self) -> &'static str {
        match self {
            Target::Sqlite => "sqlite",
            Target::Postgres(_) => "postgres",
        }
    }

    /// A fresh migrated database named `name`.
    async fn fresh(&self, dir: &Path, name: &str) -> DatabaseConnection {
        match self {
            Target::Sqlite => fresh_db(dir, &format!("{name}.db")).await,
            Target::Postgres(server) => {
                let name = format!("pt_bench_eml_{}_{name}", std::process::id());
                let admin = db::connect(server).await.expect("postgres server");
                admin
                    .execute_unprepared(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                    .await
                    .expect("drop database");
                admin
                    .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
                    .await
                    .expect("create database");
                admin.close().await.ok();
                db::open(&with_database(server, &name))
                    .await
                    .expect("fresh database")
            }
        }
    }

    /// Drops what `fresh` made.
    async fn drop(&self, name: &str) {
        if let Target::Postgres(server) = self {
            let name = format!("pt_bench_eml_{}_{name}", std::process::id());
            let admin = db::connect(server).await.expect("postgres server");
            admin
                .execute_unprepared(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                .await
                .ok();
            admin.close().await.ok();
        }
    }
}

/// `url` with its database path replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let scheme_end = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[scheme_end..];
    let path_start = rest.find('/').map_or(url.len(), |i| scheme_end + i);
    let query = url[path_start..]
        .find('?')
        .map(|i| &url[path_start + i..])
        .unwrap_or("");
    format!("{}/{name}{query}", &url[..path_start])
}

/// `sql` written with `?` placeholders, in the placeholders of `backend`.
fn placeholders(backend: DbBackend, sql: &str) -> String {
    if backend != DbBackend::Postgres {
        return sql.to_owned();
    }
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            let _ = write!(out, "${n}");
        } else {
            out.push(c);
        }
    }
    out
}

/// Runs an `INSERT` and returns the id of the new row (`RETURNING id` on PostgreSQL).
async fn insert_id<const N: usize>(
    txn: &DatabaseTransaction,
    sql: &str,
    values: [Value; N],
) -> i64 {
    let backend = txn.get_database_backend();
    if backend == DbBackend::Postgres {
        let sql = format!("{} RETURNING id", placeholders(backend, sql));
        txn.query_one_raw(Statement::from_sql_and_values(backend, sql, values))
            .await
            .unwrap()
            .expect("returned id")
            .try_get::<i64>("", "id")
            .unwrap()
    } else {
        txn.execute_raw(Statement::from_sql_and_values(backend, sql, values))
            .await
            .unwrap()
            .last_insert_id() as i64
    }
}

/// The engine: `import_eml_paths`.
async fn engine(db: &DatabaseConnection, mbox: &Path) -> usize {
    let summary = import_eml_paths(db, &[mbox.to_owned()], &options())
        .await
        .expect("import");
    assert!(summary.failed.is_empty(), "{summary}");
    summary.imported
}

/// The baseline: the same reads and writes by hand, without the generality (no
/// fallbacks, no thread merging, no directory walk).
async fn baseline(db: &DatabaseConnection, mbox: &Path) -> usize {
    let backend = db.get_database_backend();
    let reader = BufReader::with_capacity(64 * 1024, File::open(mbox).expect("open"));
    let mut count = 0;
    // Like the engine: one savepoint per message, a commit every 256 messages.
    let mut outer = db.begin().await.unwrap();
    for item in MessageIterator::new(reader) {
        let raw = item.expect("read").unwrap_contents();
        let m = MessageParser::default().parse(&raw).expect("parse");
        let id = format!("<{}>", m.message_id().unwrap_or_default());
        let addr = |a: Option<&mail_parser::Address<'_>>| {
            a.and_then(|a| a.first())
                .map(|a| match (&a.name, &a.address) {
                    (Some(n), Some(x)) => format!("{n} <{x}>"),
                    (_, Some(x)) => x.to_string(),
                    _ => String::new(),
                })
                .unwrap_or_default()
        };
        let from = addr(m.from());
        let to = serde_json::to_string(&[addr(m.to())]).unwrap();
        let subject = m.subject().unwrap_or_default().to_owned();
        let sent_at =
            chrono::DateTime::from_timestamp(m.date().unwrap().to_timestamp(), 0).unwrap();
        let text = m.body_text(0).map(|t| t.into_owned());
        let parent = m.in_reply_to().as_text().map(|p| format!("<{p}>"));
        let txn = outer.begin().await.unwrap();
        let thread = match &parent {
            Some(p) => txn
                .query_one_raw(Statement::from_sql_and_values(
                    backend,
                    placeholders(
                        backend,
                        "SELECT email_thread_id FROM messages WHERE message_id = ?",
                    ),
                    [p.clone().into()],
                ))
                .await
                .unwrap()
                .map(|r| r.try_get::<i64>("", "email_thread_id").unwrap()),
            None => None,
        };
        let thread = match thread {
            Some(t) => t,
            None => {
                insert_id(
                    &txn,
                    "INSERT INTO email_threads (subject, created_at) VALUES (?, ?)",
                    [subject.clone().into(), sent_at.into()],
                )
                .await
            }
        };
        let direction = if from.contains("support@acme.test") {
            "outbound"
        } else {
            "inbound"
        };
        let message_row = insert_id(
            &txn,
            "INSERT INTO messages (email_thread_id, message_id, direction, from_address, \
             to_addresses, cc_addresses, subject, text_body, html_body, in_reply_to, sent_at) \
             VALUES (?, ?, ?, ?, ?, '[]', ?, ?, NULL, ?, ?)",
            [
                thread.into(),
                id.clone().into(),
                direction.into(),
                from.into(),
                to.into(),
                subject.into(),
                text.into(),
                parent.into(),
                sent_at.into(),
            ],
        )
        .await;
        for (n, part) in m.attachments().enumerate() {
            let values: [Value; 6] = [
                message_row.into(),
                format!("{id}#{n}").into(),
                part.attachment_name().unwrap_or("file").to_owned().into(),
                "application/octet-stream".into(),
                (part.contents().len() as i64).into(),
                part.contents().to_vec().into(),
            ];
            txn.execute_raw(Statement::from_sql_and_values(
                backend,
                placeholders(
                    backend,
                    "INSERT INTO attachments (message_id, attachment_id, filename, content_type, \
                     byte_size, data) VALUES (?, ?, ?, ?, ?, ?)",
                ),
                values,
            ))
            .await
            .unwrap();
        }
        txn.commit().await.unwrap();
        count += 1;
        if count % 256 == 0 {
            outer.commit().await.unwrap();
            outer = db.begin().await.unwrap();
        }
    }
    outer.commit().await.unwrap();
    count
}

/// The peak resident set size (VmHWM) in KiB.
fn peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Resets VmHWM to the current resident size (Linux 4.0+).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Runs the engine and the baseline `runs` times each on `n` messages into `target`;
/// prints one line.
fn report_one(rt: &tokio::runtime::Runtime, dir: &Path, target: &Target, n: usize, runs: usize) {
    let mbox = dir.join(format!("gen-{n}.mbox"));
    generate_mbox(&mbox, n);
    let size = std::fs::metadata(&mbox).map(|m| m.len()).unwrap_or(0);
    let mut engine_times = Vec::new();
    let mut baseline_times = Vec::new();
    let mut peak = 0;
    let mut peak_before = 0;
    for run in 0..runs {
        let db = rt.block_on(target.fresh(dir, "engine"));
        reset_peak();
        peak_before = peak_before.max(peak_kib().unwrap_or(0));
        let start = Instant::now();
        let imported = rt.block_on(engine(&db, &mbox));
        engine_times.push(start.elapsed());
        peak = peak.max(peak_kib().unwrap_or(0));
        assert_eq!(imported, n, "run {run}");
        rt.block_on(db.close()).ok();
        rt.block_on(target.drop("engine"));

        let db = rt.block_on(target.fresh(dir, "baseline"));
        let start = Instant::now();
        let imported = rt.block_on(baseline(&db, &mbox));
        baseline_times.push(start.elapsed());
        assert_eq!(imported, n);
        rt.block_on(db.close()).ok();
        rt.block_on(target.drop("baseline"));
    }
    let _ = std::fs::remove_file(&mbox);
    let (e, b) = (median(engine_times), median(baseline_times));
    println!(
        "eml_import {} n={n} mbox={:.1} MiB: engine {:.3} s ({:.0} msg/s), baseline {:.3} s ({:.0} msg/s), ratio {:.2}x; peak RSS during import {} KiB (at start {} KiB)",
        target.name(),
        size as f64 / (1024.0 * 1024.0),
        e.as_secs_f64(),
        n as f64 / e.as_secs_f64(),
        b.as_secs_f64(),
        n as f64 / b.as_secs_f64(),
        e.as_secs_f64() / b.as_secs_f64(),
        peak,
        peak_before,
    );
}

fn report(rt: &tokio::runtime::Runtime, dir: &Path) {
    let mut targets = vec![Target::Sqlite];
    if let Ok(url) = std::env::var("PROTEGE_TEST_POSTGRES_URL")
        && !url.is_empty()
    {
        targets.push(Target::Postgres(url));
    }
    for target in &targets {
        report_one(rt, dir, target, 10_000, 3);
        report_one(rt, dir, target, 50_000, 1);
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let quick = std::env::args().any(|a| a == "--test" || a == "--list");
    if !quick {
        report(&rt, dir.path());
    }

    let mbox: PathBuf = dir.path().join("criterion.mbox");
    generate_mbox(&mbox, 2_000);
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(20))
        .configure_from_args();
    let mut group = c.benchmark_group("import_2000_messages");
    let mut k = 0usize;
    group.bench_function("engine", |b| {
        b.iter_batched(
            || {
                k += 1;
                rt.block_on(fresh_db(dir.path(), &format!("e{k}.db")))
            },
            |db| rt.block_on(engine(&db, &mbox)),
            BatchSize::PerIteration,
        )
    });
    group.bench_function("baseline", |b| {
        b.iter_batched(
            || {
                k += 1;
                rt.block_on(fresh_db(dir.path(), &format!("b{k}.db")))
            },
            |db| rt.block_on(baseline(&db, &mbox)),
            BatchSize::PerIteration,
        )
    });
    group.finish();
    c.final_summary();
}
