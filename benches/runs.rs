//! Recording a round of a run: `Engine::record_round` (parse the provider's response,
//! check the results, one transaction writing the run, the round and two tool uses, then
//! the next body built and validated like a resolve) on a SQLite file with the demo data and
//! the shipped `support` persona, against the same work written by hand with rusqlite and
//! serde_json in the same run. Prints rounds per second and the ratio (target ≥ 2,000
//! rounds/s).

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};
use protege::db::sea_orm::ConnectionTrait;
use protege::runs::{RoundInput, ToolResult};
use protege::{Engine, Format, ResolveInput};
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
}

impl ByHand {
    /// A run row to record into, as the engine's would be.
    fn start(&self, n: usize) -> (String, Value) {
        let id = format!("run_hand_{n}");
        self.db
            .execute(
                "INSERT INTO runs (id, persona, message_id, responsibility, format, model, status, rounds, \
                 input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, request_sha256, request, started_at) \
                 VALUES (?1, 'support', 1, NULL, 'anthropic', 'claude-sonnet-4-5', 'started', 0, 0, 0, 0, 0, '', '{}', '2026-03-10T08:00:00Z')",
                [&id],
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
                 VALUES (1, ?1, 0, ?2, ?3, ?4, ?5, ?6, ?7)",
                rusqlite::params![
                    id,
                    position as i64,
                    call["id"].as_str(),
                    call["name"].as_str(),
                    call["input"].to_string(),
                    result.content,
                    result.is_error
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
    let by_hand = ByHand {
        db: rusqlite::Connection::open(&db).unwrap(),
    };
    by_hand.db.busy_timeout(Duration::from_secs(5)).unwrap();
    // `PROTEGE_BENCH_WAL=1`: the database file in WAL mode (the default is SQLite's
    // rollback journal, a file sync per commit).
    if std::env::var_os("PROTEGE_BENCH_WAL").is_some() {
        let mode: String = by_hand
            .db
            .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
            .unwrap();
        println!("journal mode: {mode}");
    }

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
    println!(
        "record_round: {et:?} per round ({:.0} rounds/s, target >= 2000), by hand: {ht:?} per round, ratio engine/by hand = {:.2}",
        1.0 / et.as_secs_f64(),
        et.as_secs_f64() / ht.as_secs_f64()
    );
}
