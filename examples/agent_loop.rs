//! The agent loop: protege never calls a model, the application does. This example is that
//! application, end to end, with a stand-in for the model and for the tools:
//!
//! 1. a customer's mail arrives and is stored (`ingest_mail`);
//! 2. `start_run` gives round 0's Anthropic body; the loop sends it to the "model", runs the
//!    tools the response asks for, and hands protege the response and the results
//!    (`record_round`), which gives the next body, until the model answers without tools;
//! 3. the application sends that answer as its reply and stores the sent mail (outbound);
//! 4. the customer answers, and the request for the next reply replays the tool round of
//!    the run right after the mail it answered.
//!
//! Run with `cargo run --example agent_loop`. `examples/agent_loop.py` is the same loop over
//! `protege serve`'s HTTP routes and prints the same lines.

use std::fmt::Write as _;
use std::path::Path;

use protege::runs::{RoundInput, Step, ToolResult};
use protege::{Direction, Engine, Format, ResolveInput};
use serde_json::{Value, json};

/// The customer's first mail: the trigger of the run.
const FIRST: &str = "Message-ID: <kim-1@example.com>\r
From: Kim Lee <kim@example.com>\r
To: support@acme.test\r
Subject: Where is my order A-2087?\r
Date: Tue, 10 Mar 2026 09:00:00 +0000\r
\r
Hi, order A-2087 was supposed to arrive yesterday. Where is it?\r
\r
Kim\r
";

/// The customer's answer to the reply; `{reply}` is the reply's Message-ID.
const NEXT: &str = "Message-ID: <kim-2@example.com>\r
From: Kim Lee <kim@example.com>\r
To: support@acme.test\r
Subject: Re: Where is my order A-2087?\r
Date: Tue, 10 Mar 2026 09:40:00 +0000\r
In-Reply-To: {reply}\r
References: <kim-1@example.com> {reply}\r
\r
Thanks! Can you ask the carrier to deliver it to my office instead?\r
";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // A throw-away database file, so every run starts from the same data.
    let dir = tempfile::tempdir()?;
    let (printed, _bodies_sent) = run(&dir.path().join("protege.db")).await?;
    print!("{printed}");
    Ok(())
}

/// The whole story on the database file `database`: what it prints, and the bodies its
/// loop sent to the model, in order.
pub(crate) async fn run(database: &Path) -> anyhow::Result<(String, Vec<Value>)> {
    // The engine on the shipped personas and the demo data, as in the quickstart.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let engine = Engine::builder()
        .root(root)
        .database(format!("sqlite://{}", database.display()))
        // The same bytes at every run (the support persona fences mail bodies); an
        // application leaves the key to the database or to `PROTEGE_FENCE_KEY`.
        .fence_key("protege-example-fence-key")
        .build()
        .await?;
    engine
        .import_fixture(&root.join("examples/data/demo.json"))
        .await?;
    engine
        .run_sql_script(&std::fs::read_to_string(
            root.join("examples/data/customers.sql"),
        )?)
        .await?;
    let mut out = String::new();
    let mut sent = Vec::new();

    // 1. The customer's mail arrives.
    let first = engine
        .ingest_mail(FIRST.as_bytes(), Some(Direction::Inbound))
        .await?;
    writeln!(
        out,
        "stored the customer's mail ({})",
        first.direction.as_str()
    )?;

    // 2. The run: send each body, record the response and the tool results, until done.
    let input = ResolveInput::reply("support", &first.message_id)
        .format(Format::Anthropic)
        .now("2026-03-10T09:01:00Z".parse()?); // a fixed clock: the same output every run
    let run = engine.start_run(&input).await?;
    let (mut round, mut body) = (run.round, run.body);
    let answer = loop {
        sent.push(body.clone());
        let response = model(&body); // in production: POST it to the provider
        let results: Vec<ToolResult> = blocks(&response["content"], "tool_use")
            .map(call_tool)
            .collect();
        writeln!(out, "round {round}: {}", summary(&response))?;
        let step = engine
            .record_round(
                &run.id,
                RoundInput {
                    round,
                    response,
                    results,
                },
            )
            .await?;
        match step {
            Step::Continue { round: r, body: b } => (round, body) = (r, b), // the next round
            Step::Done { text, usage } => {
                writeln!(out, "run done, usage {}", serde_json::to_string(&usage)?)?;
                break text;
            }
            Step::Stopped { stop_reason, .. } => anyhow::bail!("the run stopped: {stop_reason}"),
        }
    };

    // 3. The application sends the answer (SMTP, an API) and stores the mail it sent (with
    //    a fixed Date here, as the customer's mails have, for the same output every run).
    let persona = engine.require_persona("support")?;
    let reply_id = Engine::new_message_id(&persona); // unpredictable, see SECURITY.md
    let reply = format!(
        "Message-ID: {reply_id}\r\nFrom: Acme Support <support@acme.test>\r\n\
         To: Kim Lee <kim@example.com>\r\nSubject: Re: Where is my order A-2087?\r\n\
         Date: Tue, 10 Mar 2026 09:02:00 +0000\r\nIn-Reply-To: {first_id}\r\n\
         References: {first_id}\r\n\r\n{body}\r\n",
        first_id = first.message_id,
        body = answer.replace('\n', "\r\n"),
    );
    let stored = engine
        .ingest_mail(reply.as_bytes(), Some(Direction::Outbound))
        .await?;
    writeln!(
        out,
        "stored the reply we sent ({}, in the customer's thread: {})",
        stored.direction.as_str(),
        stored.thread_id == first.thread_id
    )?;

    // 4. The customer answers; the request for the next reply replays the run's tool round.
    let next = engine
        .ingest_mail(
            NEXT.replace("{reply}", &reply_id).as_bytes(),
            Some(Direction::Inbound),
        )
        .await?;
    writeln!(
        out,
        "stored the customer's answer ({})",
        next.direction.as_str()
    )?;
    let input = ResolveInput::reply("support", &next.message_id)
        .format(Format::Messages)
        .now("2026-03-10T09:41:00Z".parse()?);
    let request = engine.resolve(&input).await?.body;
    // The thread part: the persona's system messages left out.
    let thread: Vec<&Value> = request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] != "system")
        .collect();
    writeln!(out, "the next request's thread:")?;
    writeln!(out, "{}", serde_json::to_string_pretty(&thread)?)?;
    Ok((out, sent))
}

/// The stand-in model: what Anthropic's Messages API could answer to `body`. While the
/// last user turn holds no tool results it asks for the order named in the mail and its
/// tracking, two calls at once; then it answers from the results.
fn model(body: &Value) -> Value {
    let last_turn = body["messages"].as_array().and_then(|m| m.last());
    let last_turn = last_turn.unwrap_or(&Value::Null);
    let results: Vec<&Value> = blocks(&last_turn["content"], "tool_result").collect();
    if results.is_empty() {
        let order = order_number(&last_turn["content"]);
        let content = json!([
            {"type": "text", "text": "I'll look the order up and check the carrier's tracking."},
            {"type": "tool_use", "id": "toolu_01LookupOrder", "name": "lookup_order",
             "input": {"order": order}, "caller": {"type": "direct"}},
            {"type": "tool_use", "id": "toolu_01TrackingLog", "name": "tracking_log",
             "input": {"order": order}, "caller": {"type": "direct"}},
        ]);
        // This prompt is shorter than the 1,024 tokens Anthropic caches at least: no cache
        // counts, all input is uncached.
        return response("msg_01StandInRound0", content, "tool_use", [861, 0, 0, 118]);
    }
    // The result of call `id`, as JSON.
    let result = |id: &str| -> Value {
        results
            .iter()
            .find(|r| r["tool_use_id"] == id)
            .and_then(|r| r["content"].as_str())
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default()
    };
    let (order, tracking) = (result("toolu_01LookupOrder"), result("toolu_01TrackingLog"));
    let latest = tracking["events"].as_array().and_then(|e| e.last());
    let text = format!(
        "Hello Kim,\n\nyour order {} left our warehouse on {}. \
         The carrier's latest event: {}.\n\nBest,\nAcme Support",
        order["order"].as_str().unwrap_or("?"),
        order["shipped_on"].as_str().unwrap_or("?"),
        latest.and_then(Value::as_str).unwrap_or("none"),
    );
    let content = json!([{"type": "text", "text": text}]);
    // Round 0's prompt again, with the assistant's calls and the two results.
    response("msg_01StandInRound1", content, "end_turn", [1012, 0, 0, 71])
}

/// An Anthropic Messages response; `usage` is input, cache write, cache read and output
/// tokens.
fn response(id: &str, content: Value, stop_reason: &str, usage: [u64; 4]) -> Value {
    let [input, cache_write, cache_read, output] = usage;
    json!({
        "id": id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": content, "stop_reason": stop_reason, "stop_sequence": null,
        "usage": {"input_tokens": input, "cache_creation_input_tokens": cache_write,
                  "cache_read_input_tokens": cache_read, "output_tokens": output},
    })
}

/// The first word like `A-2087` in a message's content (a string, or text blocks).
fn order_number(content: &Value) -> String {
    let text = match content.as_str() {
        Some(text) => text.to_owned(),
        None => blocks(content, "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    };
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .find(|word| word.starts_with("A-"))
        .unwrap_or("unknown")
        .to_owned()
}

/// The blocks of type `kind` of a content list (none of a plain string).
fn blocks<'a>(content: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> {
    content
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |block| block["type"] == kind)
}

/// Runs the stand-in tool a `tool_use` block names; its result answers the block's id.
fn call_tool(call: &Value) -> ToolResult {
    let order = call["input"]["order"].as_str().unwrap_or_default();
    let id = call["id"].as_str().unwrap_or_default();
    match call["name"].as_str() {
        Some("lookup_order") => ToolResult::new(id, lookup_order(order)),
        Some("tracking_log") => ToolResult::new(id, tracking_log(order)),
        other => ToolResult::new(id, format!("unknown tool {other:?}")).error(true),
    }
}

/// Stand-in tool: the order as the shop's database knows it, as JSON text.
fn lookup_order(order: &str) -> String {
    json!({"order": order, "status": "shipped", "total": "89.00 EUR", "shipped_on": "2026-03-06"})
        .to_string()
}

/// Stand-in tool: the carrier's events of the order, as JSON text.
fn tracking_log(order: &str) -> String {
    json!({"order": order, "carrier": "Colis Express", "events": [
        "2026-03-06 picked up in Lille",
        "2026-03-07 in transit",
        "2026-03-09 held at the Lyon depot: address incomplete",
    ]})
    .to_string()
}

/// One line about a response: the tools it calls, or that it answers.
fn summary(response: &Value) -> String {
    let calls: Vec<String> = blocks(&response["content"], "tool_use")
        .map(|call| format!("{} {}", call["name"].as_str().unwrap_or("?"), call["input"]))
        .collect();
    if calls.is_empty() {
        "the model answers".to_owned()
    } else {
        format!("the model calls {}", calls.join(", "))
    }
}
