//! Composing and storing a run's reply: `Engine::compose_reply` (the run and its answer
//! read, the recipients decided, the reply built with lettre's builder, then one
//! transaction storing the outbound message, its addresses, its stripped body and its outbox
//! row) on a SQLite file, against the same reply written by hand as an application would
//! without the outbox: the same lettre builder calls and `Engine::ingest_mail` of the bytes
//! as outbound mail. Prints replies per second and the ratio (target ≥ 2,000 replies/s).

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use criterion::{BatchSize, Criterion};
use lettre::message::header::{ContentTransferEncoding, ContentType};
use lettre::message::{Mailbox, SinglePart};
use protege::runs::RoundInput;
use protege::{Direction, Engine, Format, ResolveInput};
use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

const PERSONA: &str = r#"name = "agent"
addresses = ["support@acme.test"]

[model]
provider = "anthropic"
name = "claude-sonnet-4-5"

[mail]
trusted_authserv_ids = ["mx.acme.test"]

[[message_resolvers]]
use = "LoadText"
template = "You are Acme's support agent."

[[message_resolvers]]
use = "ThreadHistory"
"#;

fn answer() -> Value {
    let path = Path::new(ROOT)
        .join("protege-cli/tests/fixtures/responses/anthropic/good-loop-round-1.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Customer `n`'s authenticated mail.
fn mail(n: usize) -> String {
    format!(
        "Received: from mail.example.com by mx.acme.test; Tue, 10 Mar 2026 09:00:01 +0000\r\n\
         Authentication-Results: mx.acme.test; dmarc=pass header.from=example.com\r\n\
         Message-ID: <order-{n}@example.com>\r\nFrom: Customer {n} <c{n}@example.com>\r\n\
         To: support@acme.test\r\nSubject: Where is my order?\r\n\
         Date: Tue, 10 Mar 2026 09:00:00 +0000\r\n\r\nWhere is order A-{n}?\r\n"
    )
}

/// A finished run answering customer `n`'s mail: its id.
async fn finished_run(engine: &Engine, n: usize) -> String {
    engine
        .ingest_mail(mail(n).as_bytes(), Some(Direction::Inbound))
        .await
        .unwrap();
    let input = ResolveInput::reply("agent", format!("<order-{n}@example.com>"))
        .format(Format::Anthropic)
        .now("2026-03-10T10:00:00Z".parse().unwrap());
    let run = engine.start_run(&input).await.unwrap();
    engine
        .record_round(
            &run.id,
            RoundInput {
                round: 0,
                response: answer(),
                results: Vec::new(),
            },
        )
        .await
        .unwrap();
    run.id
}

/// The reply to customer `n` built and stored by hand: lettre's builder with the same
/// headers, and the bytes stored as outbound mail.
async fn by_hand(engine: &Engine, n: usize, text: &str) {
    let message_id = format!("<{:032x}@acme.test>", n as u128 * 7919);
    let parent = format!("<order-{n}@example.com>");
    let message = lettre::Message::builder()
        .from(Mailbox::new(None, "support@acme.test".parse().unwrap()))
        .to(Mailbox::new(
            Some(format!("Customer {n}")),
            format!("c{n}@example.com").parse().unwrap(),
        ))
        .subject("Re: Where is my order?")
        .message_id(Some(message_id))
        .date(SystemTime::now())
        .in_reply_to(parent.clone())
        .references(parent)
        .singlepart(
            SinglePart::builder()
                .header(ContentType::TEXT_PLAIN)
                .header(ContentTransferEncoding::QuotedPrintable)
                .body(text.to_owned()),
        )
        .unwrap();
    engine
        .ingest_mail(&message.formatted(), Some(Direction::Outbound))
        .await
        .unwrap();
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("personas")).unwrap();
    std::fs::write(dir.path().join("personas/agent.toml"), PERSONA).unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("outbox.db").display()
    );
    let engine = rt.block_on(async {
        Engine::builder()
            .root(dir.path())
            .database(&url)
            .build()
            .await
            .unwrap()
    });
    let text = answer()["content"][0]["text"].as_str().unwrap().to_owned();
    let mut next = 0usize;
    let mut group = c.benchmark_group("outbox");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("compose_reply", |b| {
        b.iter_batched(
            || {
                next += 1;
                rt.block_on(finished_run(&engine, next))
            },
            |run| black_box(rt.block_on(engine.compose_reply(&run)).unwrap()),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("by_hand", |b| {
        b.iter_batched(
            || {
                next += 1;
                rt.block_on(async {
                    engine
                        .ingest_mail(mail(next).as_bytes(), Some(Direction::Inbound))
                        .await
                        .unwrap();
                });
                next
            },
            |n| rt.block_on(by_hand(&engine, n, &text)),
            BatchSize::SmallInput,
        )
    });
    group.finish();

    // The ratio, timed directly over the same count of replies each.
    const N: usize = 300;
    let runs: Vec<String> = (0..N)
        .map(|_| {
            next += 1;
            rt.block_on(finished_run(&engine, next))
        })
        .collect();
    let start = Instant::now();
    for run in &runs {
        black_box(rt.block_on(engine.compose_reply(run)).unwrap());
    }
    let engine_time = start.elapsed();
    let hand: Vec<usize> = (0..N)
        .map(|_| {
            next += 1;
            rt.block_on(async {
                engine
                    .ingest_mail(mail(next).as_bytes(), Some(Direction::Inbound))
                    .await
                    .unwrap();
            });
            next
        })
        .collect();
    let start = Instant::now();
    for n in hand {
        rt.block_on(by_hand(&engine, n, &text));
    }
    let hand_time = start.elapsed();
    let rate = N as f64 / engine_time.as_secs_f64();
    println!(
        "compose + store: {rate:.0} replies/s (target >= 2,000); by hand {:.0} replies/s; engine/hand time ratio {:.2}",
        N as f64 / hand_time.as_secs_f64(),
        engine_time.as_secs_f64() / hand_time.as_secs_f64()
    );
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
