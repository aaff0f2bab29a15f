//! Recording a round of a run: `Engine::record_round` (parse the provider's response,
//! check the results, one transaction writing the run, the round and two tool uses, then
//! the next body built and validated like a resolve) on a SQLite file with the demo data and
//! the shipped `support` persona, against the same work written by hand with rusqlite and
//! serde_json in the same run. Prints rounds per second and the ratio (target ≥ 2,000
//! rounds/s). The SQLite file is written as the engine writes it (WAL, `synchronous =
//! NORMAL`), the baseline's connection too.
//!
//! Then the replay: the reply to a customer's second mail, whose first mail was answered by
//! 0, 1 or 10 recorded runs of two rounds each (two parallel tool calls, then the answer),
//! resolved with `ThreadHistory` replaying those rounds. Prints the statements one resolve
//! runs (the same whatever the number of runs: §6's constant query count) and its time
//! against the thread without runs.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{BatchSize, Criterion};
use protege::db::sea_orm::ConnectionTrait;
use protege::runs::{RoundInput, ToolResult};
use protege::{Direction, Engine, Format, ResolveInput};
use serde_json::{Value, json};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn response() -> Value {
    let path = Path::new(ROOT)
        .join("protege-cli/tests/fixtures/responses/anthropic/good-loop-round-0.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn results() -> Vec<ToolResult> {
    vec![
        ToolResult::new(
            "toolu_01LookupA1042",
            r#"{"order":"A-1042","status":"shipped"}"#,
        ),
        ToolResult::new("toolu_01TrackA1042", "carrier timeout").error(true),
    ]
}

/// The engine on the shipped personas and a SQLite file holding the demo data.
async fn engine(db: &Path) -> Engine {
    let engine = Engine::builder()
        .root(ROOT)
        .database(format!("sqlite://{}", db.display()))
        .build()
        .await
        .unwrap();
    let conn = engine.db().await.unwrap();
    engine
        .import_fixture(&Path::new(ROOT).join("examples/data/demo.json"))
        .await
        .unwrap();
    let customers = std::fs::read_to_string(Path::new(ROOT).join("examples/data/customers.sql"));
    conn.execute_unprepared(&customers.unwrap()).await.unwrap();
    engine
}

fn input() -> ResolveInput {
    ResolveInput::reply("support", "<refund-3@example.com>")
        .format(Format::Anthropic)
        .now("2026-03-10T08:00:00Z".parse().unwrap())
}

/// The same round by hand: the response's calls read with serde_json, one rusqlite
/// transaction writing the run's counts, the round and the two tool uses, and the next body
/// made by appending the assistant turn and the results to round 0's body.
struct ByHand {
    db: rusqlite::Connection,
    /// The row id of the trigger message, which the engine's runs answer too: its tool
    /// uses are replayed by the replies after it, not by its own runs' requests.
    trigger: i64,
}

impl ByHand {
    /// A run row to record into, as the engine's would be.
    fn start(&self, n: usize) -> (String, Value) {
        let id = format!("run_hand_{n}");
        self.db
            .execute(
                "INSERT INTO runs (id, persona, message_id, responsibility, format, model, status, rounds, \
                 input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, request_sha256, request, started_at) \
                 VALUES (?1, 'support', ?2, NULL, 'anthropic', 'claude-sonnet-4-5', 'started', 0, 0, 0, 0, 0, '', '{}', '2026-03-10T08:00:00Z')",
                rusqlite::params![&id, self.trigger],
            )
            .unwrap();
        (
            id,
            json!({"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hello"}]}),
        )
    }

    fn record(&self, id: &str, round0: &Value, response: &Value, results: &[ToolResult]) -> Value {
        let text = serde_json::to_string(response).unwrap();
        let parsed: Value = serde_json::from_str(&text).unwrap();
        let calls: Vec<&Value> = parsed["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .collect();
        let usage = &parsed["usage"];
        let tx = self.db.unchecked_transaction().unwrap();
        tx.execute(
            "UPDATE runs SET rounds = 1, input_tokens = input_tokens + ?2, output_tokens = output_tokens + ?3 \
             WHERE id = ?1 AND rounds = 0 AND status = 'started'",
            rusqlite::params![id, usage["input_tokens"].as_i64(), usage["output_tokens"].as_i64()],
        )
        .unwrap();
        tx.execute(
            "INSERT INTO run_rounds (run_id, round, response, results, stop_reason, input_tokens, output_tokens, \
             cache_read_tokens, cache_write_tokens, created_at) VALUES (?1, 0, ?2, ?3, 'tool_use', 0, 0, 0, 0, '2026-03-10T08:00:00Z')",
            rusqlite::params![id, text, serde_json::to_string(results).unwrap()],
        )
        .unwrap();
        for (position, (call, result)) in calls.iter().zip(results).enumerate() {
            tx.execute(
                "INSERT INTO tool_uses (message_id, run_id, turn_index, position, tool_call_id, name, input, result, is_error) \
                 VALUES (?8, ?1, 0, ?2, ?3, ?4, ?5, ?6, ?7)",
                rusqlite::params![
                    id,
                    position as i64,
                    call["id"].as_str(),
                    call["name"].as_str(),
                    call["input"].to_string(),
                    result.content,
                    result.is_error,
                    self.trigger
                ],
            )
            .unwrap();
        }
        tx.commit().unwrap();
        let mut body = round0.clone();
        let messages = body["messages"].as_array_mut().unwrap();
        messages.push(json!({"role": "assistant", "content": parsed["content"]}));
        let blocks: Vec<Value> = results
            .iter()
            .map(|r| json!({"type": "tool_result", "tool_use_id": r.tool_call_id, "content": r.content, "is_error": r.is_error}))
            .collect();
        messages.push(json!({"role": "user", "content": blocks}));
        body
    }
}

/// A mail to the support persona: `Message-ID` `<{id}@example.com>`, answering `parent`.
fn mail(id: &str, from: &str, to: &str, minute: u32, parent: Option<&str>) -> Vec<u8> {
    let mut raw = format!(
        "Message-ID: <{id}@example.com>\r\nFrom: {from}\r\nTo: {to}\r\nSubject: Order A-1042\r\n\
         Date: Tue, 10 Mar 2026 09:{minute:02}:00 +0000\r\n"
    );
    if let Some(parent) = parent {
        raw += &format!(
            "In-Reply-To: <{parent}@example.com>\r\nReferences: <{parent}@example.com>\r\n"
        );
    }
    raw += "\r\nWhere is my order A-1042? It was due yesterday.\r\n";
    raw.into_bytes()
}

/// An engine on a new SQLite file in `dir` holding a customer's thread: a first mail
/// answered by `runs` recorded runs (each two rounds: two parallel tool calls, then the
/// answer), the reply sent, and the customer's second mail; and the statements counter of
/// its connection (SeaORM's metric callback; the embedded reads are counted apart).
async fn replay_engine(dir: &Path, runs: usize) -> (Engine, Arc<AtomicUsize>) {
    let url = format!(
        "sqlite://{}",
        dir.join(format!("replay-{runs}.db")).display()
    );
    let mut conn = protege::db::connect(&url).await.unwrap();
    protege::db::migrate(&conn).await.unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    conn.set_metric_callback(move |_| {
        seen.fetch_add(1, Ordering::Relaxed);
    });
    let engine = Engine::builder()
        .root(ROOT)
        .connection(conn)
        .build()
        .await
        .unwrap();
    let customers = std::fs::read_to_string(Path::new(ROOT).join("examples/data/customers.sql"));
    let db = engine.db().await.unwrap();
    db.execute_unprepared(&customers.unwrap()).await.unwrap();
    let (kim, support) = ("Kim <kim@example.com>", "support@acme.test");
    let inbound = Some(Direction::Inbound);
    engine
        .ingest_mail(&mail("kim-1", kim, support, 0, None), inbound)
        .await
        .unwrap();
    let first = ResolveInput::reply("support", "<kim-1@example.com>").format(Format::Anthropic);
    let round0 = response();
    let round1: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(ROOT)
                .join("protege-cli/tests/fixtures/responses/anthropic/good-loop-round-1.json"),
        )
        .unwrap(),
    )
    .unwrap();
    for n in 0..runs {
        let run = engine.start_run(&first).await.unwrap();
        // Every run's calls have ids of their own, as a provider's do.
        let text = serde_json::to_string(&round0)
            .unwrap()
            .replace("A1042\"", &format!("A1042R{n}\""));
        let results = results()
            .into_iter()
            .map(|r| ToolResult {
                tool_call_id: format!("{}R{n}", r.tool_call_id),
                ..r
            })
            .collect();
        let input = RoundInput {
            round: 0,
            response: serde_json::from_str(&text).unwrap(),
            results,
        };
        engine.record_round(&run.id, input).await.unwrap();
        let input = RoundInput {
            round: 1,
            response: round1.clone(),
            results: vec![],
        };
        engine.record_round(&run.id, input).await.unwrap();
    }
    let reply = mail(
        "reply-1",
        "Acme Support <support@acme.test>",
        kim,
        5,
        Some("kim-1"),
    );
    engine
        .ingest_mail(&reply, Some(Direction::Outbound))
        .await
        .unwrap();
    engine
        .ingest_mail(&mail("kim-2", kim, support, 9, Some("reply-1")), inbound)
        .await
        .unwrap();
    (engine, count)
}

fn median_time(mut f: impl FnMut() -> Duration, rounds: usize) -> Duration {
    let mut samples: Vec<Duration> = (0..rounds).map(|_| f()).collect();
    samples.sort();
    samples[rounds / 2]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let engine = rt.block_on(engine(&db));
    let response = response();
    let record = |engine: &Engine, id: &str| {
        let input = RoundInput {
            round: 0,
            response: response.clone(),
            results: results(),
        };
        rt.block_on(engine.record_round(id, input)).unwrap()
    };
    let by_hand = rusqlite::Connection::open(&db).unwrap();
    let trigger = by_hand
        .query_row(
            "SELECT id FROM messages WHERE message_id = '<refund-3@example.com>'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    let by_hand = ByHand {
        db: by_hand,
        trigger,
    };
    by_hand.db.busy_timeout(Duration::from_secs(5)).unwrap();
    // Written as the engine writes a SQLite file: in WAL mode (the file keeps it; the
    // engine set it when it connected) with `synchronous = NORMAL` (a connection's own).
    by_hand
        .db
        .pragma_update(None, "synchronous", "NORMAL")
        .unwrap();
    let mode: String = by_hand
        .db
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    println!("journal mode: {mode}, synchronous = NORMAL");

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("runs");
    group.bench_function("record_round", |b| {
        b.iter_batched(
            || rt.block_on(engine.start_run(&input())).unwrap().id,
            |id| black_box(record(&engine, &id)),
            BatchSize::SmallInput,
        )
    });
    let mut n = 0;
    group.bench_function("baseline_by_hand", |b| {
        b.iter_batched(
            || {
                n += 1;
                by_hand.start(n)
            },
            |(id, body)| black_box(by_hand.record(&id, &body, &response, &results())),
            BatchSize::SmallInput,
        )
    });
    group.finish();

    // The replay of recorded runs: statements and time of one resolve.
    let second = ResolveInput::reply("support", "<kim-2@example.com>")
        .format(Format::Anthropic)
        .now("2026-03-10T10:00:00Z".parse().unwrap());
    let mut replays = Vec::new();
    for runs in [0, 1, 10] {
        let (engine, count) = rt.block_on(replay_engine(dir.path(), runs));
        let conn = rt.block_on(engine.db()).unwrap().clone();
        let statements = || {
            count.load(Ordering::Relaxed)
                + protege::db::embedded_statements(&conn).unwrap_or(0) as usize
        };
        let before = statements();
        let out = rt.block_on(engine.resolve(&second)).unwrap();
        let n = statements() - before;
        let tool_uses = out.body["messages"]
            .to_string()
            .matches("\"tool_use\"")
            .count();
        let mut group = c.benchmark_group("replay");
        group.bench_function(format!("{runs}_runs"), |b| {
            b.iter(|| black_box(rt.block_on(engine.resolve(&second)).unwrap()))
        });
        group.finish();
        replays.push((runs, n, tool_uses, engine));
    }
    // The times, interleaved: three passes over the three engines, the fastest median each.
    let mut times = vec![Duration::MAX; replays.len()];
    for _ in 0..3 {
        for (i, (_, _, _, engine)) in replays.iter().enumerate() {
            let time = median_time(
                || {
                    let start = Instant::now();
                    for _ in 0..50 {
                        black_box(rt.block_on(engine.resolve(&second)).unwrap());
                    }
                    start.elapsed() / 50
                },
                5,
            );
            times[i] = times[i].min(time);
        }
    }

    // Rounds per second and the ratio, measured interleaved in this same run: 50 rounds of
    // fresh runs per sample, the runs started outside the timing.
    let mut engine_t = Vec::new();
    let mut hand_t = Vec::new();
    for _ in 0..3 {
        engine_t.push(median_time(
            || {
                let ids: Vec<String> = (0..50)
                    .map(|_| rt.block_on(engine.start_run(&input())).unwrap().id)
                    .collect();
                let start = Instant::now();
                for id in &ids {
                    black_box(record(&engine, id));
                }
                start.elapsed() / 50
            },
            3,
        ));
        hand_t.push(median_time(
            || {
                let runs: Vec<(String, Value)> = (0..50)
                    .map(|_| {
                        n += 1;
                        by_hand.start(n)
                    })
                    .collect();
                let start = Instant::now();
                for (id, body) in &runs {
                    black_box(by_hand.record(id, body, &response, &results()));
                }
                start.elapsed() / 50
            },
            3,
        ));
    }
    engine_t.sort();
    hand_t.sort();
    let (et, ht) = (engine_t[1], hand_t[1]);
    let without = times[0];
    for ((runs, statements, tool_uses, _), time) in replays.iter().zip(&times) {
        println!(
            "replay of {runs} runs: {statements} statements per resolve, {tool_uses} tool calls replayed, {time:?} per resolve, ratio to no run = {:.2}",
            time.as_secs_f64() / without.as_secs_f64()
        );
    }
    println!(
        "record_round: {et:?} per round ({:.0} rounds/s, target >= 2000), by hand: {ht:?} per round, ratio engine/by hand = {:.2}",
        1.0 / et.as_secs_f64(),
        et.as_secs_f64() / ht.as_secs_f64()
    );
}
