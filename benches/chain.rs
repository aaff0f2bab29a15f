//! A static chain of LoadText(template), LoadFile(literal), LoadFile(templated path) and
//! LoadText(closure) against the same renders and reads written by hand, in one run.
//! Prints the ratio chain / baseline (target ≤ 1.2). Then the wire formats: one request
//! (instructions, a thread of ten mails, a tool round, three tools) as an OpenAI Responses
//! body against the same request as a Chat Completions body, and the ratio Responses /
//! Chat Completions (target ≤ 1.1).

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use criterion::Criterion;
use protege::wire::{ModelSpec, to_openai, to_openai_responses};
use protege::{
    AppConfig, CacheHints, Chain, Context, LoadFile, LoadText, Message, PersonaInfo, Request,
    Responsibility, Role, StaticChain, ToolCall, ToolDef, Trigger, message,
};

const GREETING: &str =
    "You are {{ persona.name }} at {{ persona.vars.company }}. Today is {{ now }}.";
const TEAM_PATH: &str = "prompts/{{ persona.vars.team | slugify }}.md";

fn setup() -> (tempfile::TempDir, Context) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("prompts")).unwrap();
    std::fs::write(
        dir.path().join("prompts/agent.md"),
        "# Acme support\n\nYou answer questions about orders.\n".repeat(20),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("prompts/support-team.md"),
        "Team prompt for the support team.\n".repeat(10),
    )
    .unwrap();
    let mut persona = PersonaInfo::new("support");
    persona.vars.insert("company".into(), "Acme".into());
    persona.vars.insert("team".into(), "Support Team!".into());
    let ctx = Context::builder(
        persona,
        AppConfig::new(dir.path()),
        Trigger::Responsibility(Responsibility {
            name: "digest".into(),
            schedule: "0 8 * * *".into(),
            instructions: "Summarise.".into(),
            ..Responsibility::default()
        }),
    )
    .now(Utc.with_ymd_and_hms(2026, 7, 1, 12, 0, 0).unwrap())
    .build();
    (dir, ctx)
}

fn closure_text(ctx: &Context) -> String {
    format!("Sign as the {} team.", ctx.persona().name)
}

/// A minijinja environment set up as protege sets up its own: semi-strict undefined, no
/// auto-escaping, debug info, the default fuel and a `slugify` filter.
fn environment() -> minijinja::Environment<'static> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::SemiStrict);
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.set_debug(true);
    env.set_fuel(Some(5_000_000));
    env.add_filter("slugify", |s: String| slugify(&s));
    env
}

/// Lowercase ASCII letters and digits, every other run of characters one `-`.
fn slugify(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut dash = false;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c.to_ascii_lowercase());
        } else {
            dash = true;
        }
    }
    out
}

/// The same work by hand: one minijinja environment, two renders, two reads, one closure.
struct Baseline {
    env: minijinja::Environment<'static>,
    root: std::path::PathBuf,
}

impl Baseline {
    fn new(root: &Path) -> Self {
        let mut env = environment();
        env.add_template("greeting", GREETING).unwrap();
        env.add_template("team", TEAM_PATH).unwrap();
        Self {
            env,
            root: root.to_path_buf(),
        }
    }

    fn run(&self, ctx: &Context) -> Vec<Message> {
        let vars = ctx.template_vars();
        let mut out = Vec::with_capacity(4);
        let text = self
            .env
            .get_template("greeting")
            .unwrap()
            .render(vars)
            .unwrap();
        out.push(message(Role::System, text.trim().to_owned()));
        let agent = std::fs::read_to_string(self.root.join("prompts/agent.md")).unwrap();
        out.push(message(Role::System, agent));
        let path = self.env.get_template("team").unwrap().render(vars).unwrap();
        let team = std::fs::read_to_string(self.root.join(path)).unwrap();
        out.push(message(Role::System, team));
        out.push(message(Role::System, closure_text(ctx)));
        out
    }
}

fn median_time(mut f: impl FnMut(), iters: u32, rounds: usize) -> Duration {
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..iters {
            f();
        }
        samples.push(start.elapsed() / iters);
    }
    samples.sort();
    samples[rounds / 2]
}

/// A reply run's request: instructions, ten mails of a thread, a tool round with two
/// calls, the new mail, three tools and a conversation key.
fn wire_request() -> Request {
    let mut messages = vec![message(
        Role::System,
        "You are Acme's support agent. Answer briefly and politely.\n".repeat(20),
    )];
    for i in 0..10 {
        let line = "Could you tell me where my order is? It has been a while. ".repeat(6);
        let role = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        messages.push(message(role, format!("Message {i}: {line}")));
    }
    let order = serde_json::json!({"order": "A-1042"});
    messages.push(message(Role::Assistant, "").with_tool_calls(vec![
        ToolCall::new("call_LookupA1042", "lookup_order", order.clone()),
        ToolCall::new("call_TrackA1042", "tracking_log", order),
    ]));
    messages.push(
        message(Role::Tool, r#"{"order":"A-1042","status":"shipped"}"#)
            .with_tool_call_id("call_LookupA1042"),
    );
    messages.push(message(Role::Tool, "carrier timeout").with_tool_call_id("call_TrackA1042"));
    messages.push(message(
        Role::User,
        "Thanks! Can you also refund the shipping?",
    ));
    let tools = ["lookup_order", "tracking_log", "issue_refund"]
        .into_iter()
        .map(|name| ToolDef {
            name: name.into(),
            description: format!("The {name} tool of the order system"),
            input_schema: serde_json::json!({"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}),
        })
        .collect();
    Request {
        messages,
        tools,
        cache: CacheHints {
            history_end: Some(10),
            key: Some("0123456789abcdef".into()),
            hour: false,
        },
        ..Default::default()
    }
}

/// The same request as a Responses body and as a Chat Completions body: criterion's
/// figures, then the ratio measured interleaved.
fn wire_bodies(c: &mut Criterion) {
    let request = wire_request();
    let model = ModelSpec::new("gpt-5").max_tokens(1024);
    let mut group = c.benchmark_group("wire");
    group.bench_function("openai_responses_body", |b| {
        b.iter(|| black_box(to_openai_responses(black_box(&request), &model).unwrap()))
    });
    group.bench_function("openai_chat_body", |b| {
        b.iter(|| black_box(to_openai(black_box(&request), &model).unwrap()))
    });
    group.finish();
    let mut responses_t = Vec::new();
    let mut chat_t = Vec::new();
    for _ in 0..5 {
        responses_t.push(median_time(
            || {
                black_box(to_openai_responses(black_box(&request), &model).unwrap());
            },
            2_000,
            11,
        ));
        chat_t.push(median_time(
            || {
                black_box(to_openai(black_box(&request), &model).unwrap());
            },
            2_000,
            11,
        ));
    }
    responses_t.sort();
    chat_t.sort();
    let (rt, ct) = (responses_t[2], chat_t[2]);
    println!(
        "wire: responses body {:?}, chat completions body {:?}, ratio responses/chat = {:.3} (target <= 1.1)",
        rt,
        ct,
        rt.as_secs_f64() / ct.as_secs_f64()
    );
}

fn main() {
    let (dir, ctx) = setup();
    let chain = StaticChain::new((
        LoadText::template(GREETING),
        LoadFile::new("prompts/agent.md"),
        LoadFile::new(TEAM_PATH),
        LoadText::from_fn(|ctx| Ok(closure_text(ctx))),
    ));
    let baseline = Baseline::new(dir.path());
    let by_chain = futures::executor::block_on(chain.resolve(&ctx)).unwrap();
    assert_eq!(by_chain, baseline.run(&ctx), "chain and baseline differ");

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("chain");
    group.bench_function("static_chain", |b| {
        b.iter(|| black_box(futures::executor::block_on(chain.resolve(&ctx)).unwrap()))
    });
    group.bench_function("baseline_by_hand", |b| {
        b.iter(|| black_box(baseline.run(&ctx)))
    });
    group.finish();

    // The ratio, measured interleaved in this same run.
    let mut chain_t = Vec::new();
    let mut base_t = Vec::new();
    for _ in 0..5 {
        chain_t.push(median_time(
            || {
                black_box(futures::executor::block_on(chain.resolve(&ctx)).unwrap());
            },
            2_000,
            11,
        ));
        base_t.push(median_time(
            || {
                black_box(baseline.run(&ctx));
            },
            2_000,
            11,
        ));
    }
    chain_t.sort();
    base_t.sort();
    let (ct, bt) = (chain_t[2], base_t[2]);
    println!(
        "chain: {:?} per run, baseline: {:?} per run, ratio chain/baseline = {:.3} (target <= 1.2)",
        ct,
        bt,
        ct.as_secs_f64() / bt.as_secs_f64()
    );

    wire_bodies(&mut c);
}
