//! Counting the tokens of the 1,000-message reference thread (all of it, as ThreadHistory
//! with `limit = false` renders it) with OpenAI's tokenizers against the characters / 4
//! estimate, the baseline. In-memory SQLite.
//!
//! `cargo bench --bench tokens` prints criterion's numbers and, from interleaved runs, the
//! median of each, the ratios to the estimate and to the ThreadHistory read itself, the
//! time of a hostile one-piece body, and the one-off cost of building each encoder.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use protege::db;
use protege_core::{
    AppConfig, Content, Context, Message, Part, PersonaInfo, Resolver, ThreadHistory, Tokenizer,
};

mod common;

use common::{CURRENT, PRIOR, reference_thread};

/// The tokens of every message, as `ThreadHistory`'s `max_tokens` budget counts them.
fn count(tokenizer: Tokenizer, messages: &[Message]) -> usize {
    messages.iter().map(|m| tokenizer.count_message(m)).sum()
}

/// The median of `n` timed runs of each closure, interleaved.
fn medians<const K: usize>(n: usize, mut runs: [&mut dyn FnMut(); K]) -> [Duration; K] {
    let mut times = vec![Vec::with_capacity(n); K];
    for _ in 0..n {
        for (run, t) in runs.iter_mut().zip(&mut times) {
            let start = Instant::now();
            run();
            t.push(start.elapsed());
        }
    }
    let mut out = [Duration::ZERO; K];
    for (o, mut t) in out.iter_mut().zip(times) {
        t.sort();
        *o = t[n / 2];
    }
    out
}

/// The characters (Unicode scalar values) of a message's text, each attachment part
/// counted by the length of its base64 data.
fn message_chars(m: &Message) -> usize {
    match &m.content {
        Content::Text(text) => text.chars().count(),
        Content::Parts(parts) => parts
            .iter()
            .map(|p| match p {
                Part::Text { text } => text.chars().count(),
                Part::Image { data, .. } | Part::Document { data, .. } => data.len(),
            })
            .sum(),
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (ctx, history) = rt.block_on(async {
        let conn = db::open("sqlite::memory:").await.unwrap();
        db::import_fixture_str(&conn, &reference_thread().to_string())
            .await
            .unwrap();
        let current = db::load_message(&conn, CURRENT).await.unwrap().unwrap();
        let ctx = Context::builder(
            PersonaInfo::new("bench"),
            AppConfig::new("."),
            protege_core::Trigger::Message(current.into()),
        )
        .db(conn)
        .build();
        (ctx, ThreadHistory::new().limit(None))
    });
    let messages = rt.block_on(history.resolve(&ctx)).unwrap();
    assert_eq!(messages.len(), PRIOR + 501);
    let chars: usize = messages.iter().map(message_chars).sum();

    // The one-off cost: each encoder is built from its embedded vocabulary on first use.
    let mut build = Vec::new();
    for tokenizer in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
        let start = Instant::now();
        tokenizer.count("warm-up");
        build.push((tokenizer, start.elapsed()));
    }

    let tokenizers = [
        Tokenizer::Estimate,
        Tokenizer::O200kBase,
        Tokenizer::Cl100kBase,
    ];
    let mut group = c.benchmark_group("tokens");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(6));
    for tokenizer in tokenizers {
        group.bench_function(format!("{} 1,000 messages", tokenizer.name()), |b| {
            b.iter(|| count(tokenizer, &messages))
        });
    }
    group.bench_function("ThreadHistory read, limit=all", |b| {
        b.iter(|| rt.block_on(history.resolve(&ctx)).unwrap())
    });
    group.finish();

    let [estimate, o200k, cl100k, read] = medians(
        15,
        [
            &mut || {
                std::hint::black_box(count(Tokenizer::Estimate, &messages));
            },
            &mut || {
                std::hint::black_box(count(Tokenizer::O200kBase, &messages));
            },
            &mut || {
                std::hint::black_box(count(Tokenizer::Cl100kBase, &messages));
            },
            &mut || drop(rt.block_on(history.resolve(&ctx)).unwrap()),
        ],
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "\nthe reference thread: {} messages, {chars} characters",
        messages.len()
    );
    println!("medians of interleaved runs (counting every message):");
    for (tokenizer, time) in [
        (Tokenizer::Estimate, estimate),
        (Tokenizer::O200kBase, o200k),
        (Tokenizer::Cl100kBase, cl100k),
    ] {
        println!(
            "{:<12} {:>8} tokens  {:>9.3} ms  {:>7.1}x the estimate  {:>5.2}x the ThreadHistory read",
            tokenizer.name(),
            count(tokenizer, &messages),
            ms(time),
            ms(time) / ms(estimate),
            ms(time) / ms(read),
        );
    }
    println!("ThreadHistory read, limit=all: {:.3} ms", ms(read));
    let hostile = "x".repeat(1_000_000);
    let start = Instant::now();
    let n = Tokenizer::O200kBase.count(&hostile);
    println!(
        "a hostile body of 1,000,000 letters with o200k_base: {n} tokens in {:.1} ms",
        ms(start.elapsed())
    );
    for (tokenizer, time) in build {
        println!(
            "building the {} encoder (once per process): {:.1} ms",
            tokenizer.name(),
            ms(time)
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
