//! The outbox's delivery against a real Postfix (`PROTEGE_TEST_POSTFIX`, installed by
//! `scripts/postfix-install`; without it the bench says so and stops): one queued reply
//! delivered by `Delivery::deliver_once` (the claim, the row read, the persona's settings, the
//! SMTP exchange, `sent` recorded under the lease) against the SMTP exchange alone
//! (`protege_agent::send` of the same kind of bytes to the same server), in the same run.
//! Prints the medians and the overhead per message (target ≤ 1 ms).

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};
use protege::outbox::Composed;
use protege::runs::RoundInput;
use protege::{Direction, Engine, Format, ResolveInput};
use serde_json::Value;

#[path = "../tests/common/postfix.rs"]
#[allow(dead_code)]
mod postfix;

const PERSONA: &str = r#"name = "agent"
addresses = ["support@acme.test"]

[model]
provider = "anthropic"
name = "claude-sonnet-4-5"

[mail]
trusted_authserv_ids = ["mx.acme.test"]

[[message_resolvers]]
use = "ThreadHistory"
"#;

fn answer() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/responses/anthropic/good-loop-round-1.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A queued reply to customer `n`.
async fn queued(engine: &Engine, n: usize) {
    let mail = format!(
        "Received: from mail.example.com by mx.acme.test; Tue, 10 Mar 2026 09:00:01 +0000\r\n\
         Authentication-Results: mx.acme.test; dmarc=pass header.from=example.com\r\n\
         Message-ID: <bench-{n}@example.com>\r\nFrom: Customer <c{n}@example.com>\r\n\
         To: support@acme.test\r\nSubject: Order\r\nDate: Tue, 10 Mar 2026 09:00:00 +0000\r\n\
         \r\nWhere is it?\r\n"
    );
    engine
        .ingest_mail(mail.as_bytes(), Some(Direction::Inbound))
        .await
        .unwrap();
    let input = ResolveInput::reply("agent", format!("<bench-{n}@example.com>"))
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
    assert!(matches!(
        engine.compose_reply(&run.id).await.unwrap(),
        Composed::Reply { .. }
    ));
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let Some(postfix) = postfix::Postfix::start() else {
        println!("delivery bench skipped: set PROTEGE_TEST_POSTFIX=/usr/sbin/postfix");
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("personas")).unwrap();
    let smtp = format!(
        "\n[outbox]\nsmtp = \"smtp://127.0.0.1:{}\"\ntls = \"none\"\n",
        postfix.port()
    );
    std::fs::write(
        dir.path().join("personas/agent.toml"),
        format!("{PERSONA}{smtp}"),
    )
    .unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("delivery.db").display()
    );
    let engine = rt.block_on(async {
        Engine::builder()
            .root(dir.path())
            .database(&url)
            .build()
            .await
            .unwrap()
    });
    let worker = rt.block_on(engine.delivery("bench")).unwrap();
    let server = protege::SmtpServer {
        host: "127.0.0.1".into(),
        port: postfix.port(),
        security: protege::TlsMode::None,
    };
    // The bytes of one reply, sent again and again by the bare exchange.
    rt.block_on(queued(&engine, 0));
    let raw = rt
        .block_on(engine.claim_outbox("bench-raw", 1, Duration::from_secs(60), None))
        .unwrap()
        .remove(0)
        .entry
        .raw
        .unwrap();
    let recipients = vec!["c0@example.com".to_owned()];
    let bare = || {
        let attempt = protege::agent::Attempt {
            server: &server,
            login: None,
            ca_pem: None,
            hello: "acme.test",
            timeout: Duration::from_secs(30),
            from: "support@acme.test",
            recipients: &recipients,
            raw: raw.as_bytes(),
        };
        let outcome = rt.block_on(protege::agent::send(&attempt));
        assert!(
            matches!(outcome, protege::agent::Outcome::Sent { .. }),
            "{outcome:?}"
        );
    };
    let mut next = 0usize;
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("delivery");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5));
    group.bench_function("deliver_once", |b| {
        b.iter_batched(
            || {
                next += 1;
                rt.block_on(queued(&engine, next));
            },
            |()| {
                let pass = rt.block_on(worker.deliver_once(None)).unwrap();
                assert_eq!(pass.sent, 1);
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("smtp_exchange_alone", |b| b.iter(bare));
    group.finish();

    // The medians, over the same number of messages each, interleaved.
    const N: usize = 100;
    let (mut engine_times, mut bare_times) = (Vec::new(), Vec::new());
    for _ in 0..N {
        next += 1;
        rt.block_on(queued(&engine, next));
        let start = Instant::now();
        let pass = rt.block_on(worker.deliver_once(None)).unwrap();
        engine_times.push(start.elapsed());
        assert_eq!(pass.sent, 1);
        let start = Instant::now();
        bare();
        bare_times.push(start.elapsed());
    }
    let (with, alone) = (median(engine_times), median(bare_times));
    println!(
        "delivery: {:.3} ms per reply, the SMTP exchange alone {:.3} ms: overhead {:.3} ms (target <= 1 ms), ratio {:.2}",
        with.as_secs_f64() * 1e3,
        alone.as_secs_f64() * 1e3,
        (with.as_secs_f64() - alone.as_secs_f64()) * 1e3,
        with.as_secs_f64() / alone.as_secs_f64()
    );
    c.final_summary();
}
