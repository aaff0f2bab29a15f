//! Usage as measurement (§13): `cache-report --from-runs` over recorded runs, the cache
//! share the provider reported next to the simulated one; and token counts calibrated
//! from the usage of recorded runs for a model without a public tokenizer.

use std::path::Path;

use protege::runs::{RoundInput, Step, ToolResult};
use protege::{Engine, EngineErrorKind, Format, ResolveInput, RunCacheRow};
use serde_json::{Value, json};

mod common;
use common::AGENT;
use common::server::{every_backend, execute, protege};

const ZOE: &str = "Zoe <zoe@example.com>";
const FIRST: &str = "<usage-1@example.com>";
const SENT: &str = "<usage-2@acme.test>";
const NEXT: &str = "<usage-3@example.com>";
const ANSWER: &str = "Hello Zoe,\n\nyour order A-1042 left our warehouse on 9 March; the carrier has it in transit.\n\nBest,\nAcme Support";
const LOOKUP: &str = "toolu_01LookupA1042";
const TRACK: &str = "toolu_01TrackA1042";
const ORDER: &str = r#"{"order":"A-1042","status":"shipped"}"#;

/// An app root holding `personas/NAME.toml` with `text`.
fn root_with(name: &str, text: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(root.path().join(format!("personas/{name}.toml")), text).unwrap();
    root
}

/// The customer's thread: a question, the reply, a follow-up.
fn thread() -> Value {
    json!({"threads": [{"subject": "Where is my order?", "messages": [
        {"message_id": FIRST, "direction": "inbound", "from": ZOE, "to": ["support@acme.test"],
         "subject": "Where is my order?", "sent_at": "2026-03-10T09:00:00Z", "text_body": "Where is order A-1042?"},
        {"message_id": SENT, "direction": "outbound", "from": "Acme Support <support@acme.test>", "to": [ZOE],
         "subject": "Re: Where is my order?", "sent_at": "2026-03-10T09:05:00Z", "text_body": ANSWER, "in_reply_to": FIRST},
        {"message_id": NEXT, "direction": "inbound", "from": ZOE, "to": ["support@acme.test"],
         "subject": "Re: Where is my order?", "sent_at": "2026-03-10T09:30:00Z",
         "text_body": "Thanks! Can you also refund the shipping?", "in_reply_to": SENT},
    ]}]})
}

/// A response fixture of `tests/fixtures/responses/anthropic/`.
fn fixture_response(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/responses/anthropic")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// An Anthropic final answer reporting `[input, cache_read, cache_write]` input tokens.
fn answer(usage: [u64; 3]) -> Value {
    let [input, read, write] = usage;
    json!({
        "id": "msg_01Usage", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Done."}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": input, "output_tokens": 3,
                  "cache_read_input_tokens": read, "cache_creation_input_tokens": write},
    })
}

async fn record(
    engine: &Engine,
    run: &str,
    round: u32,
    response: Value,
    results: Vec<ToolResult>,
) -> Step {
    engine
        .record_round(
            run,
            RoundInput {
                round,
                response,
                results,
            },
        )
        .await
        .unwrap()
}

/// Records the runs of the report on `url`: a reply run of two rounds to the first mail,
/// a reply run of one round to the follow-up, and a scheduled run that has not recorded
/// its round 0. Returns their ids.
async fn record_runs(root: &Path, url: &str) -> [String; 3] {
    let engine = Engine::builder()
        .root(root)
        .database(url)
        .build()
        .await
        .unwrap();
    protege::db::import_fixture_str(engine.db().await.unwrap(), &thread().to_string())
        .await
        .unwrap();
    let start = |input: ResolveInput| {
        let engine = engine.clone();
        async move { engine.start_run(&input).await.unwrap().id }
    };
    let reply = |id: &str, now: &str| {
        ResolveInput::reply("agent", id)
            .format(Format::Anthropic)
            .now(now.parse().unwrap())
    };
    let first = start(reply(FIRST, "2026-03-10T09:01:00Z")).await;
    let results = vec![
        ToolResult::new(LOOKUP, ORDER),
        ToolResult::new(TRACK, "carrier timeout").error(true),
    ];
    let step = record(
        &engine,
        &first,
        0,
        fixture_response("good-loop-round-0.json"),
        results,
    )
    .await;
    assert!(matches!(step, Step::Continue { round: 1, .. }), "{step:?}");
    let step = record(
        &engine,
        &first,
        1,
        fixture_response("good-loop-round-1.json"),
        vec![],
    )
    .await;
    assert!(matches!(step, Step::Done { .. }), "{step:?}");

    let next = start(reply(NEXT, "2026-03-10T09:31:00Z")).await;
    let step = record(&engine, &next, 0, answer([300, 1460, 500]), vec![]).await;
    assert!(matches!(step, Step::Done { .. }), "{step:?}");

    let digest = start(
        ResolveInput::scheduled("agent", "digest")
            .format(Format::Anthropic)
            .now("2026-03-11T08:00:00Z".parse().unwrap()),
    )
    .await;
    [first, next, digest]
}

/// The cost and the cost without a cache of each row, rounded to the millionth of a cent.
fn costs(rows: &[RunCacheRow]) -> Vec<(f64, f64)> {
    let round = |c: Option<f64>| (c.unwrap() * 1e8).round() / 1e8;
    rows.iter()
        .map(|r| (round(r.cost), round(r.uncached_cost)))
        .collect()
}

/// The rows without their costs (checked by [`costs`]).
fn without_costs(mut rows: Vec<RunCacheRow>) -> Vec<RunCacheRow> {
    for r in &mut rows {
        (r.cost, r.uncached_cost) = (None, None);
    }
    rows
}

/// The rows of the three runs.
fn rows([first, next, digest]: &[String; 3]) -> Vec<RunCacheRow> {
    let row =
        |id: &String, status: &str, rounds, usage: [u64; 2], simulated: [usize; 2]| RunCacheRow {
            run_id: id.clone(),
            status: status.to_owned(),
            rounds,
            billed_tokens: usage[0],
            cache_read_tokens: usage[1],
            simulated_input_tokens: simulated[0],
            simulated_cached_tokens: simulated[1],
            cost: None,
            uncached_cost: None,
        };
    vec![
        // Round 0 finds nothing before it; round 1 reads the tools, the instructions and the
        // mail up to round 0's breakpoint. Reported: 1460 of 812 + 1460 + 143 + 1460 + 212.
        row(
            first,
            "done",
            2,
            [4087, 1460],
            [SIM_FIRST, SIM_FIRST_CACHED],
        ),
        // Round 0 reads the tools, the instructions and the first mail of the previous
        // run's round 0 (its round 1 replays another assistant text).
        row(next, "done", 1, [2260, 1460], [SIM_NEXT, SIM_NEXT_CACHED]),
        row(digest, "started", 0, [0, 0], [0, 0]),
    ]
}

/// The simulated tokens of the first run's two bodies (tools 37 + 42, instructions 14, the
/// mail 44; then the assistant's calls and the results), and what round 1 reads from
/// round 0: the tools, the instructions and the mail.
const SIM_FIRST: usize = 394;
const SIM_FIRST_CACHED: usize = 37 + 42 + 14 + 44;
/// The follow-up's body, and what it reads from the first run's round 0.
const SIM_NEXT: usize = 362;
const SIM_NEXT_CACHED: usize = 37 + 42 + 14 + 44;

const FOOTER: &str = "billed = input + cache read + cache write tokens as the provider reported them for the recorded rounds; reported = cached (read) / billed
simulated = the share of the same bodies (tokens estimated as characters / 4 of each block's JSON) a prompt cache would serve: round 0 after the previous run of its conversation, round k after round k - 1, up to the longest shared prefix (that ends at a breakpoint, for anthropic bodies)
cost = USD at the run's model's prices per million tokens (the persona's `[model] prices` over the shipped ones; - without a price); without caching {UNCACHED}, saved {SAVED}
";

/// What `protege cache-report --from-runs --persona agent` prints for the three runs, and
/// with `--since 2026-03-10T09:30:00Z`.
fn report_text([first, next, digest]: &[String; 3], since: bool) -> String {
    let header = "    #  run                             status   rounds    billed    cached  reported  simulated       cost\n";
    if since {
        let footer = FOOTER
            .replace("{UNCACHED}", "$0.0068")
            .replace("{SAVED}", "$0.0036");
        format!(
            "cache report from runs: persona `agent`, since 2026-03-10T09:30:00Z, 2 runs\n{header}    1  {next}  done          1      2260      1460     64.6%      37.8%    $0.0033
    2  {digest}  started       0         0         0         -          -    $0.0000
       total                                         1      2260      1460     64.6%      37.8%    $0.0033
{footer}"
        )
    } else {
        let footer = FOOTER
            .replace("{UNCACHED}", "$0.0214")
            .replace("{SAVED}", "$0.0063");
        format!(
            "cache report from runs: persona `agent`, 3 runs\n{header}    1  {first}  done          2      4087      1460     35.7%      34.8%    $0.0119
    2  {next}  done          1      2260      1460     64.6%      37.8%    $0.0033
    3  {digest}  started       0         0         0         -          -    $0.0000
       total                                         3      6347      2920     46.0%      36.2%    $0.0151
{footer}"
        )
    }
}

#[tokio::test]
async fn cache_report_from_runs_on_every_backend() {
    let root = root_with("agent", AGENT);
    let name = format!("pt_usage_report_{}", std::process::id());
    for (url, server_url) in every_backend(root.path(), &name).await {
        check_report(root.path(), &url).await;
        if let Some(server_url) = server_url {
            execute(&server_url, &format!("DROP DATABASE IF EXISTS {name}")).await;
        }
    }
}

/// The report of the three runs recorded on `url`, all of them and since the follow-up.
async fn check_report(root: &Path, url: &str) {
    let ids = record_runs(root, url).await;
    let engine = Engine::builder()
        .root(root)
        .database(url)
        .build()
        .await
        .unwrap();
    let report = engine.cache_report_from_runs("agent", None).await.unwrap();
    // At claude-sonnet-4-5's prices (USD per million tokens: input 3, output 15, cache read
    // 0.3, write 3.75): the first run 955 input, 153 output, 1460 read, 1672 written; the
    // follow-up 300, 3, 1460, 500; without a cache every input token at 3.
    assert_eq!(
        costs(&report.rows),
        [
            (11_868.0 / 1e6, 14_556.0 / 1e6),
            (3_258.0 / 1e6, 6_825.0 / 1e6),
            (0.0, 0.0)
        ],
        "{url}"
    );
    assert_eq!(without_costs(report.rows.clone()), rows(&ids), "{url}");
    assert_eq!(format!("{report}\n"), report_text(&ids, false), "{url}");
    let since = engine
        .cache_report_from_runs("agent", Some("2026-03-10T09:30:00Z".parse().unwrap()))
        .await
        .unwrap();
    assert_eq!(without_costs(since.rows.clone()), rows(&ids)[1..], "{url}");
    assert_eq!(format!("{since}\n"), report_text(&ids, true), "{url}");
    // A persona with no run that does not exist is unknown.
    let e = engine
        .cache_report_from_runs("nobody", None)
        .await
        .unwrap_err();
    assert_eq!(
        (e.kind(), e.to_string()),
        (
            EngineErrorKind::NotFound,
            "unknown persona `nobody`; known personas: `agent`".to_owned()
        )
    );
}

#[test]
fn cache_report_from_runs_prints_each_run_and_the_total() {
    let root = root_with("agent", AGENT);
    let url = format!(
        "sqlite://{}?mode=rwc",
        root.path().join("runs.db").display()
    );
    let ids = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(record_runs(root.path(), &url));
    let cli = |args: &[&str]| {
        let out = protege(root.path(), &url).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let report = ["cache-report", "--from-runs", "--persona", "agent"];
    assert_eq!(
        cli(&report),
        (Some(0), report_text(&ids, false), String::new())
    );
    let since = [&report[..], &["--since", "2026-03-10T09:30:00Z"]].concat();
    assert_eq!(
        cli(&since),
        (Some(0), report_text(&ids, true), String::new())
    );
    // An offset is read as the instant it names.
    let offset = [&report[..], &["--since", "2026-03-10T11:30:00+02:00"]].concat();
    assert_eq!(
        cli(&offset),
        (Some(0), report_text(&ids, true), String::new())
    );
    // Usage errors: a thread with --from-runs, neither, --since alone, a bad time, a format.
    for args in [
        &[&report[..], &["--thread", "1"]].concat()[..],
        &["cache-report", "--persona", "agent"],
        &[
            "cache-report",
            "--persona",
            "agent",
            "--thread",
            "1",
            "--since",
            "2026-03-10T09:30:00Z",
        ],
        &[&report[..], &["--since", "yesterday"]].concat(),
        &[&report[..], &["--format", "openai"]].concat(),
    ] {
        let (code, out, err) = cli(args);
        assert_eq!((code, out.as_str()), (Some(2), ""), "{args:?}: {err}");
    }
    let (code, out, err) = cli(&[&report[..], &["--thread", "1"]].concat());
    assert_eq!((code, out.as_str()), (Some(2), ""));
    assert!(
        err.contains("the argument '--from-runs' cannot be used with '--thread <THREAD_ID>'"),
        "{err}"
    );
    // The thread's report is as before.
    let (code, out, err) = cli(&["cache-report", "--persona", "agent", "--thread", "1"]);
    assert_eq!((code, err.as_str()), (Some(0), ""));
    assert!(
        out.starts_with(
            "cache report: persona `agent`, thread 1, anthropic bodies, 2 reply runs\n"
        ),
        "{out}"
    );
}

/// A persona of a model without a public tokenizer: instructions, the thread, one tool.
const CAL: &str = r#"addresses = ["help@acme.test"]

[model]
provider = "anthropic"
name = "claude-sonnet-4-5"

[[tools]]
name = "lookup_order"
description = "Find an order"
input_schema = { type = "object", properties = { order = { type = "string" } }, required = ["order"] }

[[message_resolvers]]
use = "LoadText"
template = "You are Acme's support agent. Answer briefly."

[[message_resolvers]]
use = "ThreadHistory"
"#;

const THREADS: usize = 26;

/// The Message-ID of message `j` of thread `i`.
fn cal_id(i: usize, j: usize) -> String {
    format!("<cal-{i}-{j}@example.com>")
}

/// How many messages thread `i` has: 1 to 6, the last one inbound.
fn cal_len(i: usize) -> usize {
    1 + (i * 7) % 6
}

/// `THREADS` threads of different lengths and message sizes.
fn cal_threads() -> Value {
    let threads: Vec<Value> = (0..THREADS)
        .map(|i| {
            let n = cal_len(i);
            let messages: Vec<Value> = (0..n)
                .map(|j| {
                    let inbound = (n - 1 - j).is_multiple_of(2);
                    let words = "please check the order status ".repeat(1 + ((i * 5 + j * 3) % 13).pow(2) / 3);
                    json!({
                        "message_id": cal_id(i, j),
                        "direction": if inbound { "inbound" } else { "outbound" },
                        "from": if inbound { "Ann <ann@example.com>" } else { "Acme <help@acme.test>" },
                        "to": [if inbound { "help@acme.test" } else { "ann@example.com" }],
                        "subject": format!("Order {i}"),
                        "sent_at": format!("2026-03-{:02}T{:02}:00:00Z", 1 + i, 8 + j),
                        "text_body": format!("Message {j} of thread {i}: {words}"),
                    })
                })
                .collect();
            json!({"subject": format!("Order {i}"), "messages": messages})
        })
        .collect();
    json!({ "threads": threads })
}

/// The reply run to the last message of thread `i`.
fn cal_input(i: usize) -> ResolveInput {
    ResolveInput::reply("cal", cal_id(i, cal_len(i) - 1))
        .format(Format::Anthropic)
        .now(format!("2026-03-{:02}T20:00:00Z", 1 + i).parse().unwrap())
}

/// The known rule the provider bills by in this test: characters / 3.1 + 5 per message.
fn known(chars: usize, messages: usize) -> f64 {
    chars as f64 / 3.1 + 5.0 * messages as f64
}

/// Records the reply run of thread `i`, billed by [`known`] (rounded) and split between
/// uncached, cache-read and cache-written tokens.
async fn record_cal_run(engine: &Engine, i: usize) {
    let request = engine.resolve(&cal_input(i)).await.unwrap().request;
    let billed = known(
        protege::Calibration::chars(&request),
        request.messages.len(),
    )
    .round() as u64;
    let run = engine.start_run(&cal_input(i)).await.unwrap();
    let (read, write) = (billed * 3 / 10, billed / 7);
    let step = record(
        engine,
        &run.id,
        0,
        answer([billed - read - write, read, write]),
        vec![],
    )
    .await;
    assert!(matches!(step, Step::Done { .. }), "{step:?}");
}

const ESTIMATE: &str = "tokens are estimated as characters / 4, rounded up, plus 4 per message";
const CALIBRATED: &str =
    "tokens are calibrated from 24 runs: 0.3226 per character plus 4.97 per message, rounded";

/// The last line of `protege resolve --explain` for the reply to thread `i`.
fn explain_footer(root: &Path, url: &str, i: usize) -> String {
    let out = protege(root, url)
        .args([
            "resolve",
            "--persona",
            "cal",
            "--format",
            "anthropic",
            "--explain",
        ])
        .args(["--message", &cal_id(i, cal_len(i) - 1)])
        .args(["--now", &format!("2026-03-{:02}T20:00:00Z", 1 + i)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8(out.stderr).unwrap();
    err.lines().last().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_counts_calibrated_tokens_once_20_runs_are_recorded() {
    let root = root_with("cal", CAL);
    let url = format!("sqlite://{}?mode=rwc", root.path().join("cal.db").display());
    let engine = Engine::builder()
        .root(root.path())
        .database(&url)
        .build()
        .await
        .unwrap();
    protege::db::import_fixture_str(engine.db().await.unwrap(), &cal_threads().to_string())
        .await
        .unwrap();
    // The reply to the last thread is never recorded: the request the fit is tried on.
    let probe = THREADS - 1;

    // 19 runs: the estimate, as before.
    for i in 0..19 {
        record_cal_run(&engine, i).await;
    }
    let out = engine
        .resolve(&cal_input(probe).explain(true))
        .await
        .unwrap();
    assert_eq!(
        (out.calibration, out.token_source()),
        (None, "estimate".to_owned())
    );
    let estimate: Vec<Option<usize>> = out
        .steps
        .iter()
        .scan(0, |start, s| {
            let messages = &out.request.messages[*start..*start + s.messages];
            *start += s.messages;
            Some(Some(
                messages
                    .iter()
                    .map(|m| protege::Tokenizer::Estimate.count_message(m))
                    .sum(),
            ))
        })
        .collect();
    assert_eq!(
        out.steps.iter().map(|s| s.tokens).collect::<Vec<_>>(),
        estimate
    );
    assert_eq!(out.describe_tokens(), ESTIMATE);
    let footer = tokio::task::block_in_place(|| explain_footer(root.path(), &url, probe));
    assert_eq!(footer, ESTIMATE);

    // 24 runs: the same engine refits with the five new ones.
    for i in 19..24 {
        record_cal_run(&engine, i).await;
    }
    let out = engine
        .resolve(&cal_input(probe).explain(true))
        .await
        .unwrap();
    let calibration = out.calibration.expect("calibrated");
    assert_eq!(calibration.runs, 24);
    // The fit finds the rule: 1 / 3.1 token per character and 5 per message, within 2%.
    assert!(
        (calibration.per_char * 3.1 - 1.0).abs() < 0.02,
        "{calibration:?}"
    );
    assert!(
        (calibration.per_message / 5.0 - 1.0).abs() < 0.02,
        "{calibration:?}"
    );
    assert_eq!(out.token_source(), "calibrated from 24 runs");
    assert_eq!(out.describe_tokens(), CALIBRATED);
    // The counts of the new request are within 2% of the rule, whole and row by row.
    let request = &out.request;
    let chars = protege::Calibration::chars(request);
    let want = known(chars, request.messages.len());
    let got = calibration.count_request(request) as f64;
    assert!((got - want).abs() <= 0.02 * want, "{got} against {want}");
    let mut start = 0;
    for step in &out.steps {
        let messages = &request.messages[start..start + step.messages];
        start += step.messages;
        let text: usize = messages
            .iter()
            .map(|m| {
                protege::Calibration::chars(&protege::Request {
                    messages: vec![m.clone()],
                    ..Default::default()
                })
            })
            .sum();
        let want = known(text, messages.len());
        let got = step.tokens.unwrap() as f64;
        assert!(
            (got - want).abs() <= 0.02 * want + 0.5,
            "{}: {got} against {want}",
            step.name
        );
    }
    // A fresh engine (the command line) fits the same.
    let footer = tokio::task::block_in_place(|| explain_footer(root.path(), &url, probe));
    assert_eq!(footer, CALIBRATED);
    // Without --explain nothing is counted, and a model with a tokenizer keeps it.
    let plain = engine.resolve(&cal_input(probe)).await.unwrap();
    assert_eq!(plain.calibration, None);
    let openai = engine
        .resolve(&cal_input(probe).model("gpt-4o").explain(true))
        .await
        .unwrap();
    assert_eq!(
        (openai.calibration, openai.token_source()),
        (None, "tokenizer o200k_base".to_owned())
    );
}

#[tokio::test]
async fn the_calibration_reads_every_backend() {
    let root = root_with("cal", CAL);
    let name = format!("pt_usage_calibration_{}", std::process::id());
    for (url, server_url) in every_backend(root.path(), &name).await {
        calibrate_on(root.path(), &url).await;
        if let Some(server_url) = server_url {
            execute(&server_url, &format!("DROP DATABASE IF EXISTS {name}")).await;
        }
    }
}

/// 19, 20 and 21 runs of the model recorded on `url`: no fit, then a fit that grows.
async fn calibrate_on(root: &Path, url: &str) {
    let engine = Engine::builder()
        .root(root)
        .database(url)
        .build()
        .await
        .unwrap();
    protege::db::import_fixture_str(engine.db().await.unwrap(), &cal_threads().to_string())
        .await
        .unwrap();
    for i in 0..19 {
        record_cal_run(&engine, i).await;
    }
    // A run that reported no usage is no sample.
    let run = engine.start_run(&cal_input(19)).await.unwrap();
    record(&engine, &run.id, 0, answer([0, 0, 0]), vec![]).await;
    let model = "claude-sonnet-4-5";
    assert_eq!(engine.calibration(model).await.unwrap(), None, "{url}");
    record_cal_run(&engine, 20).await;
    let fit = engine.calibration(model).await.unwrap().expect(url);
    assert_eq!(fit.runs, 20, "{url}");
    assert!((fit.per_char * 3.1 - 1.0).abs() < 0.02, "{fit:?} {url}");
    record_cal_run(&engine, 21).await;
    let fit = engine.calibration(model).await.unwrap().expect(url);
    assert_eq!(fit.runs, 21, "{url}");
    // A fresh engine reads the same fit; another model has none.
    let fresh = Engine::builder()
        .root(root)
        .database(url)
        .build()
        .await
        .unwrap();
    assert_eq!(fresh.calibration(model).await.unwrap(), Some(fit), "{url}");
    assert_eq!(
        fresh.calibration("claude-haiku-4-5").await.unwrap(),
        None,
        "{url}"
    );
}
