//! Erasing one correspondent among many stored messages, and dropping a day of old threads:
//! `forget` and `prune` (and their dry runs) on a SQLite file, and on a fresh PostgreSQL
//! database when `PROTEGE_TEST_POSTGRES_URL` names a server where the user may create
//! databases.
//!
//! `cargo bench -p protege-store --bench forget` imports a generated fixture of 100,000
//! messages once per backend (`-- --messages N` for another size): threads of five
//! messages between one of 1,000 customers and support, the first message of each thread
//! with the next customer in Cc and a tool use, every tenth message with an attachment;
//! the customers measured also get a run with a round on each thread's first message and a
//! summary of each thread. Then, for five customers in turn, it times the dry run and the
//! erasure, and prints one line per customer and the medians. Last, for five days in turn
//! (the messages are dated over 28 days of January 2026, 1,440 a day), it times the dry run
//! and the prune of the threads whose newest message was sent that day, and prints one line
//! per day and the medians.

use std::path::Path;
use std::time::{Duration, Instant};

use protege::db::{self, Forgotten, NewRun, Pruned};
use protege_core::db::entities::run_round;
use sea_orm::{ActiveValue::Set, ConnectionTrait, DatabaseConnection, EntityTrait};
use serde_json::{Value, json};

/// Messages per thread.
const THREAD_LEN: usize = 5;
/// Customers the threads are spread over.
const CUSTOMERS: usize = 1_000;
/// Customers erased, one after another.
const MEASURED: usize = 5;

fn customer(c: usize) -> String {
    format!("Customer {c} <c{c}@example.com>")
}

/// The fixture: `n` messages in threads of [`THREAD_LEN`].
fn fixture(n: usize) -> String {
    let support = "Acme Support <support@acme.test>";
    let body = "The parcel arrived with a dented corner and the lid does not close. ".repeat(4);
    let threads: Vec<Value> = (0..n.div_ceil(THREAD_LEN))
        .map(|t| {
            let c = t % CUSTOMERS;
            let messages: Vec<Value> = (0..THREAD_LEN.min(n - t * THREAD_LEN))
                .map(|k| {
                    let i = t * THREAD_LEN + k;
                    let inbound = k.is_multiple_of(2);
                    let (from, to) = if inbound {
                        (customer(c), support.to_owned())
                    } else {
                        (support.to_owned(), customer(c))
                    };
                    let cc: Vec<String> = if k == 0 {
                        vec![customer((c + 1) % CUSTOMERS)]
                    } else {
                        vec![]
                    };
                    let mut m = json!({
                        "message_id": format!("<m{t}-{k}@bench.test>"),
                        "direction": if inbound { "inbound" } else { "outbound" },
                        "from": from, "to": [to], "cc": cc,
                        "subject": format!("Order {t}"),
                        "sent_at": format!("2026-01-{:02}T{:02}:{:02}:00Z", 1 + (i / 1440) % 28, (i / 60) % 24, i % 60),
                        "text_body": body,
                    });
                    if i.is_multiple_of(10) {
                        m["attachments"] = json!([{"id": format!("att-{i}"), "filename": "photo.png",
                            "content_type": "image/png", "byte_size": 3, "data_base64": "YWJj"}]);
                    }
                    if k == 0 {
                        m["tool_uses"] = json!([{"run_id": format!("r{t}"), "turn_index": 0, "position": 0,
                            "tool_call_id": format!("call-{t}"), "name": "lookup_order",
                            "input": {"order": t}, "result": "shipped"}]);
                    }
                    m
                })
                .collect();
            json!({"subject": format!("Order {t}"), "messages": messages})
        })
        .collect();
    json!({ "threads": threads }).to_string()
}

/// A run with one round on the first message of each thread of the measured customers,
/// and a summary of each of those threads.
async fn runs_and_summaries(db: &DatabaseConnection, n: usize) {
    let now: chrono::DateTime<chrono::Utc> = "2026-03-01T00:00:00Z".parse().unwrap();
    for t in (0..n.div_ceil(THREAD_LEN)).filter(|t| (1..=MEASURED).contains(&(t % CUSTOMERS))) {
        let first = db::load_message(db, &format!("<m{t}-0@bench.test>"))
            .await
            .expect("load")
            .expect("stored");
        let id = format!("run_bench_{t}");
        db::insert_run(
            db,
            &NewRun {
                id: id.clone(),
                persona: "support".into(),
                message_id: Some(first.id),
                responsibility: None,
                format: protege_core::db::RunFormat::Openai,
                model: "m".into(),
                request_sha256: "0".repeat(64),
                request: "{}".into(),
                started_at: now,
                sources: Vec::new(),
            },
        )
        .await
        .expect("run");
        run_round::Entity::insert(run_round::ActiveModel {
            run_id: Set(id),
            round: Set(0),
            response: Set("{}".into()),
            results: Set("[]".into()),
            stop_reason: Set("stop".into()),
            input_tokens: Set(1),
            output_tokens: Set(1),
            cache_read_tokens: Set(0),
            cache_write_tokens: Set(0),
            created_at: Set(now),
            ..Default::default()
        })
        .exec(db)
        .await
        .expect("round");
        let last = format!("<m{t}-{}@bench.test>", THREAD_LEN - 1);
        db::store_summary(db, &last, "The customer waits for a replacement.", now)
            .await
            .expect("summary");
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

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// One line of counts: `table n, ...`.
fn counts(removed: &db::Removed) -> String {
    let counts: Vec<String> = removed
        .rows()
        .iter()
        .map(|(t, n)| format!("{t} {n}"))
        .collect();
    counts.join(", ")
}

/// Drops the threads of the first [`MEASURED`] days one day at a time: the cut-off is the
/// midnight after the day, counted back from 2026-02-01.
async fn measure_prune(name: &str, db: &DatabaseConnection) {
    let now: chrono::DateTime<chrono::Utc> = "2026-02-01T00:00:00Z".parse().unwrap();
    let (mut dry, mut real) = (Vec::new(), Vec::new());
    for day in 1..=MEASURED {
        let older_than = Duration::from_secs((31 - day as u64) * 86_400);
        let start = Instant::now();
        let counted: Pruned = db::prune(db, older_than, now, true).await.expect("dry run");
        dry.push(start.elapsed());
        let start = Instant::now();
        let removed = db::prune(db, older_than, now, false).await.expect("prune");
        real.push(start.elapsed());
        assert_eq!(counted, removed);
        println!(
            "{name}: the threads of 2026-01-{day:02}: dry run {}, prune {} ({})",
            ms(dry[day - 1]),
            ms(real[day - 1]),
            counts(&removed)
        );
    }
    println!(
        "{name}: median of {MEASURED}: dry run {}, prune {}",
        ms(median(dry)),
        ms(median(real))
    );
}

/// Imports the fixture into `db`, then erases the measured customers one by one, then
/// prunes a day of threads at a time.
async fn measure(name: &str, db: &DatabaseConnection, text: &str, n: usize) {
    let start = Instant::now();
    db::import_fixture_str(db, text).await.expect("import");
    runs_and_summaries(db, n).await;
    println!("{name}: imported {n} messages in {}", ms(start.elapsed()));
    let (mut dry, mut real) = (Vec::new(), Vec::new());
    for c in 1..=MEASURED {
        let address = format!("c{c}@example.com");
        let start = Instant::now();
        let counted: Forgotten = db::forget(db, &address, true).await.expect("dry run");
        dry.push(start.elapsed());
        let start = Instant::now();
        let removed = db::forget(db, &address, false).await.expect("forget");
        real.push(start.elapsed());
        assert_eq!(counted, removed);
        println!(
            "{name}: {address}: dry run {}, forget {} ({})",
            ms(dry[c - 1]),
            ms(real[c - 1]),
            counts(&removed)
        );
    }
    println!(
        "{name}: median of {MEASURED}: dry run {}, forget {}",
        ms(median(dry)),
        ms(median(real))
    );
    measure_prune(name, db).await;
}

async fn run(dir: &Path, n: usize) {
    let text = fixture(n);
    let url = format!("sqlite://{}", dir.join("forget.db").display());
    let sqlite = db::open(&url).await.expect("sqlite file");
    measure("sqlite file", &sqlite, &text, n).await;
    sqlite.close().await.ok();

    if let Ok(server) = std::env::var("PROTEGE_TEST_POSTGRES_URL")
        && !server.is_empty()
    {
        let name = format!("pt_bench_forget_{}", std::process::id());
        let admin = db::connect(&server).await.expect("postgres server");
        admin
            .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
            .await
            .expect("create database");
        let pg = db::open(&with_database(&server, &name))
            .await
            .expect("fresh database");
        measure("postgres", &pg, &text, n).await;
        pg.close().await.ok();
        admin
            .execute_unprepared(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
            .await
            .ok();
        admin.close().await.ok();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // `cargo test --benches` runs this with `--test`: a small fixture, to check it works.
    let quick = args.iter().any(|a| a == "--test" || a == "--list");
    let n = match args.iter().position(|a| a == "--messages") {
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .filter(|&n: &usize| n > 0)
            .unwrap_or_else(|| {
                eprintln!("error: --messages takes a positive number");
                std::process::exit(2)
            }),
        None if quick => 10 * CUSTOMERS,
        None => 100_000,
    };
    let dir = tempfile::tempdir().expect("temp dir");
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(run(dir.path(), n));
}
