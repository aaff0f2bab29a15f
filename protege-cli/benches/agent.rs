//! The agent's own overhead (§17) against a zero-latency provider stand-in and a local HTTP
//! tool, on SQLite:
//!
//! - `agent/job_11_rounds`: `Agent::work_once` on a job whose run takes 10 rounds of one
//!   signed HTTP tool call each and a final answer (the claim, the gate, each response
//!   stored before its call, the round recorded, the next body, the reply composed into the
//!   outbox, the lease renewed);
//! - `agent/by_hand_11_rounds`: the same rounds driven by hand in the same run: the run
//!   started, each body posted to the stand-in, the tool called, the round recorded; no
//!   job, no outbox;
//! - `agent/job_1_round`: a job answered in one round: the claim, the gate, the run started,
//!   the provider asked, the reply stored;
//! - `agent/claim_to_first_request`: from `Agent::work_once` on a stored job to the moment
//!   the stand-in holds the whole first request (the claim, the gate, the persona resolved,
//!   the run started, the body sent).
//!
//! Prints rounds per second of each and the ratio, what a round after the first adds to a
//! job (rounds per second of the loop itself), and the median claim-to-first-request.

use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};
use protege::agent::ProviderClient;
use protege::runs::{RoundInput, Step, ToolResult};
use protege::{Direction, Engine, Format, ResolveInput};
use protege_agent::standin::{self, Scripted, StandIn};
use serde_json::{Value, json};

const ROUNDS: usize = 11;

fn persona(provider: &str, tool: &str) -> String {
    format!(
        r#"name = "support"
addresses = ["support@acme.test"]

[model]
provider = "anthropic"
name = "claude-sonnet-4-5"
max_tokens = 1024
base_url = "{provider}"
api_key_env = "BENCH_KEY"

[agent]
unauthenticated = "send"
max_replies_per_day = 1000000
max_replies_per_correspondent_per_day = 1000000

[[tools]]
name = "lookup_order"
description = "Find an order"
input_schema = {{ type = "object", properties = {{ order = {{ type = "string" }} }}, required = ["order"] }}
http = {{ url = "{tool}/lookup", secret_env = "BENCH_SECRET" }}

[[message_resolvers]]
use = "LoadText"
template = "You are Acme's support agent."

[[message_resolvers]]
use = "ThreadHistory"
"#
    )
}

/// The answers of one 11-round run: 10 rounds of one call (ids unique in the run), then text.
fn script() -> Vec<Scripted> {
    let mut out = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS - 1 {
        let mut answer = standin::anthropic_tool_use(&[("lookup_order", json!({"order": "A-1"}))]);
        answer["content"][0]["id"] = json!(format!("toolu_01bench{round:017}"));
        out.push(Scripted::Json(200, answer));
    }
    out.push(Scripted::Json(200, standin::anthropic_text("It shipped.")));
    out
}

fn mail(n: usize) -> String {
    let date = chrono::Utc::now().to_rfc2822();
    format!(
        "Message-ID: <bench-{n}@example.com>\r\nFrom: c{n} <c{n}@example.com>\r\n\
         To: support@acme.test\r\nSubject: Order\r\nDate: {date}\r\n\r\nWhere is it?\r\n"
    )
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let provider = rt.block_on(StandIn::start([])).unwrap();
    let tool = rt.block_on(async {
        let app = axum::Router::new().route(
            "/lookup",
            axum::routing::post(|| async { r#"{"status":"shipped"}"# }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        url
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("personas")).unwrap();
    std::fs::write(
        dir.path().join("personas/support.toml"),
        persona(&provider.base_url(), &tool),
    )
    .unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("agent.db").display()
    );
    let engine = rt.block_on(async {
        Engine::builder()
            .root(dir.path())
            .database(&url)
            .build()
            .await
            .unwrap()
    });
    let agent = engine
        .agent("bench")
        .unwrap()
        .env(|name| Some(format!("{name}-value-0123456789")))
        .provider_client(ProviderClient::new().unwrap());
    let http = protege::agent::http_client().unwrap();
    let next = std::cell::Cell::new(0usize);
    // A customer's mail received: stored with its job.
    let fresh = || {
        next.set(next.get() + 1);
        rt.block_on(engine.ingest_mail(mail(next.get()).as_bytes(), Some(Direction::Inbound)))
            .unwrap();
        next.get()
    };
    // A customer's mail imported: stored without a job, for the loop driven by hand (a
    // run of its own on a message the agent answers is refused).
    let imported = || {
        next.set(next.get() + 1);
        let file = dir.path().join(format!("bench-{}.eml", next.get()));
        std::fs::write(&file, mail(next.get())).unwrap();
        rt.block_on(engine.import_eml(&[file], &protege::EmlImport::default()))
            .unwrap();
        next.get()
    };

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("agent");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("job_11_rounds", |b| {
        b.iter_batched(
            || {
                fresh();
                provider.push(script());
            },
            |()| {
                let report = rt.block_on(agent.work_once()).unwrap().unwrap();
                assert_eq!(
                    (report.state.as_str(), report.rounds.len()),
                    ("done", ROUNDS)
                );
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function("by_hand_11_rounds", |b| {
        b.iter_batched(
            || {
                let n = imported();
                provider.push(script());
                n
            },
            |n| {
                rt.block_on(by_hand(&engine, &http, &provider.base_url(), &tool, n));
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function("job_1_round", |b| {
        b.iter_batched(
            || {
                fresh();
                provider.push([Scripted::Json(200, standin::anthropic_text("It shipped."))]);
            },
            |()| {
                let report = rt.block_on(agent.work_once()).unwrap().unwrap();
                assert_eq!(report.state, "done");
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function("claim_to_first_request", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                fresh();
                provider.push([Scripted::Json(200, standin::anthropic_text("It shipped."))]);
                let start = Instant::now();
                rt.block_on(agent.work_once()).unwrap().unwrap();
                let received = provider.last_request().unwrap().at;
                total += received - start;
            }
            total
        });
    });
    group.finish();
    // A direct timing for the summary line (criterion's own report is above): jobs of 11
    // rounds and of one taken in turn, so that whatever else the machine does weighs on both
    // alike, and medians of `SAMPLES`.
    const SAMPLES: usize = 41;
    let time = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        f();
        start.elapsed()
    };
    let median = |mut samples: Vec<Duration>| {
        samples.sort();
        samples[samples.len() / 2]
    };
    let (mut long, mut short) = (Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        long.push(time(&mut || {
            fresh();
            provider.push(script());
            rt.block_on(agent.work_once()).unwrap().unwrap();
        }));
        short.push(time(&mut || {
            fresh();
            provider.push([Scripted::Json(200, standin::anthropic_text("It shipped."))]);
            rt.block_on(agent.work_once()).unwrap().unwrap();
        }));
    }
    let (agent_median, one_round_median) = (median(long), median(short));
    let hand_median = median(
        (0..SAMPLES)
            .map(|_| {
                time(&mut || {
                    let n = imported();
                    provider.push(script());
                    rt.block_on(by_hand(&engine, &http, &provider.base_url(), &tool, n));
                })
            })
            .collect(),
    );
    let mut firsts: Vec<Duration> = (0..SAMPLES)
        .map(|_| {
            fresh();
            provider.push([Scripted::Json(200, standin::anthropic_text("It shipped."))]);
            let start = Instant::now();
            rt.block_on(agent.work_once()).unwrap().unwrap();
            provider.last_request().unwrap().at - start
        })
        .collect();
    firsts.sort();
    let per_second = |d: Duration| ROUNDS as f64 / d.as_secs_f64();
    // A round after the first: what 10 more rounds add to a job of one.
    let marginal = agent_median.saturating_sub(one_round_median) / (ROUNDS as u32 - 1);
    println!(
        "agent: {:.0} rounds/s (job of {ROUNDS} rounds, mail stored included); by hand: {:.0} rounds/s; ratio {:.2}",
        per_second(agent_median),
        per_second(hand_median),
        hand_median.as_secs_f64() / agent_median.as_secs_f64()
    );
    println!(
        "agent: a round after the first {:.2} ms ({:.0} rounds/s); claim to first request p50 {:.2} ms",
        marginal.as_secs_f64() * 1e3,
        1.0 / marginal.as_secs_f64().max(f64::EPSILON),
        firsts[firsts.len() / 2].as_secs_f64() * 1e3
    );
}

/// The rounds of one run driven by hand: what the agent does, without its bookkeeping.
async fn by_hand(engine: &Engine, http: &reqwest::Client, provider: &str, tool: &str, n: usize) {
    let input = ResolveInput::reply("support", format!("<bench-{n}@example.com>"))
        .format(Format::Anthropic);
    let run = engine.start_run(&input).await.unwrap();
    let mut body = run.body;
    for round in 0.. {
        let response: Value = http
            .post(format!("{provider}/v1/messages"))
            .header("x-api-key", "key")
            .header("anthropic-version", "2023-06-01")
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let mut results = Vec::new();
        if let Some(call) = response["content"]
            .as_array()
            .and_then(|c| c.iter().find(|b| b["type"] == "tool_use"))
        {
            let text = http
                .post(format!("{tool}/lookup"))
                .json(&call["input"])
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            results.push(ToolResult::new(call["id"].as_str().unwrap(), text));
        }
        let step = engine
            .record_round(
                &run.id,
                RoundInput {
                    round,
                    response,
                    results,
                },
            )
            .await
            .unwrap();
        match step {
            Step::Continue { body: next, .. } => body = next,
            _ => break,
        }
    }
}
