//! Quoted text stripped from a 50-message thread in which each reply quotes the whole
//! thread below it: `strip_quoted` over the thread walked oldest first (each body
//! stripped against the index of the bodies before it, then added to it), against a
//! hand-written baseline doing the same walk in the simplest way (per body: drop the
//! `>` lines and everything after the first line ending in "wrote:"), and against what
//! `quoted = "keep"` does with the bodies (a copy of each).
//!
//! Two shapes: top-posted (the answer above "On … wrote:" and the quote, as Gmail and
//! Outlook write; step 2 cuts) and bottom-posted (the quote first, the answer below it;
//! step 1 removes the quote because the thread holds it).
//!
//! `cargo bench -p protege-mail --bench quoted` prints, before criterion's own report,
//! one line per shape: the thread's size, the three times and the ratios of strip to
//! the baseline and to keep.

mod common;
use common::median;

use std::time::Duration;

use criterion::Criterion;
use protege_mail::{PriorBodies, strip_quoted};

const MESSAGES: usize = 50;

const WORDS: &[&str] = &[
    "invoice",
    "order",
    "shipment",
    "refund",
    "delivery",
    "address",
    "payment",
    "account",
    "Thursday",
    "tomorrow",
    "warehouse",
    "label",
    "tracking",
    "number",
    "parcel",
    "customer",
    "support",
    "replacement",
    "photo",
    "damaged",
    "box",
    "receipt",
    "credit",
    "card",
];

/// The author's own text of message `k`: four lines of words drawn at random (the same
/// for every run), different from every other message's.
fn own_text(k: usize) -> String {
    let mut state = (k as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut text = format!("Hello,\n\nThis is message {k} of the thread.\n");
    for _ in 0..4 {
        let words: Vec<&str> = (0..11)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                WORDS[(state >> 33) as usize % WORDS.len()]
            })
            .collect();
        text.push_str(&words.join(" "));
        text.push_str(".\n");
    }
    text.push_str(if k.is_multiple_of(2) {
        "\nThanks,\nAnn\n"
    } else {
        "\nBest regards,\nBob\n"
    });
    text
}

fn quoted(body: &str) -> String {
    body.lines()
        .map(|l| {
            if l.is_empty() {
                ">\n".to_owned()
            } else {
                format!("> {l}\n")
            }
        })
        .collect()
}

fn attribution(k: usize) -> String {
    let (name, address) = if k.is_multiple_of(2) {
        ("Ann", "ann")
    } else {
        ("Bob", "bob")
    };
    format!(
        "On Tue, 3 Mar 2020 at {:02}:{:02}, {name} Smith <{address}@example.com> wrote:\n",
        k / 60 + 8,
        k % 60
    )
}

/// The thread, oldest first: each reply quotes the previous body, which quotes the one
/// before it, down to the first.
fn thread(top_posted: bool) -> Vec<String> {
    let mut bodies: Vec<String> = vec![own_text(0)];
    for k in 1..MESSAGES {
        let previous = &bodies[k - 1];
        let quote = format!("{}{}", attribution(k - 1), quoted(previous));
        bodies.push(if top_posted {
            format!("{}\n{quote}", own_text(k))
        } else {
            format!("{quote}\n{}", own_text(k))
        });
    }
    bodies
}

/// `strip_quoted` over the thread, as the engine walks it (an index with room for the
/// window's bodies, then `strip_next`: each body stripped against the ones before it,
/// then added).
fn strip_thread(bodies: &[String]) -> usize {
    let mut prior = PriorBodies::with_capacity(bodies.iter().map(String::len).sum());
    bodies
        .iter()
        .map(|body| prior.strip_next(body).text.len())
        .sum()
}

/// The baseline: per body, the lines that are not quoted (every line read), up to the
/// first one ending in "wrote:".
fn baseline_thread(bodies: &[String]) -> usize {
    let mut kept = 0;
    for body in bodies {
        let lines: Vec<&str> = body
            .lines()
            .filter(|l| !l.trim_start().starts_with('>'))
            .collect();
        let cut = lines
            .iter()
            .position(|l| l.trim_end().ends_with("wrote:"))
            .unwrap_or(lines.len());
        kept += lines[..cut].join("\n").trim_end().len();
    }
    kept
}

/// What `quoted = "keep"` does with the bodies: a copy of each.
fn keep_thread(bodies: &[String]) -> usize {
    bodies.iter().map(|body| body.to_owned().len()).sum()
}

/// Fails unless every stripped body is its author's own text.
fn check(shape: &str, bodies: &[String]) {
    let mut prior = PriorBodies::new();
    for (k, body) in bodies.iter().enumerate() {
        let text = strip_quoted(body, &prior).text;
        assert_eq!(
            text.trim_end(),
            own_text(k).trim_end(),
            "{shape}, message {k}"
        );
        prior.add(body);
    }
}

fn main() {
    let shapes = [
        ("top-posted", thread(true)),
        ("bottom-posted", thread(false)),
    ];
    for (shape, bodies) in &shapes {
        check(shape, bodies);
        let bytes: usize = bodies.iter().map(String::len).sum();
        let engine = median(9, || strip_thread(bodies));
        let baseline = median(9, || baseline_thread(bodies));
        let keep = median(9, || keep_thread(bodies));
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "quoted {shape}, {MESSAGES} messages, {:.2} MiB: strip {:.2} ms; baseline {:.2} ms, \
             ratio {:.1}x; keep (a copy) {:.3} ms, ratio {:.0}x",
            bytes as f64 / (1 << 20) as f64,
            ms(engine),
            ms(baseline),
            engine.as_secs_f64() / baseline.as_secs_f64(),
            ms(keep),
            engine.as_secs_f64() / keep.as_secs_f64()
        );
    }
    let mut c = Criterion::default()
        .configure_from_args()
        .sample_size(20)
        .measurement_time(Duration::from_secs(5));
    for (shape, bodies) in &shapes {
        c.bench_function(&format!("strip_quoted {shape} thread"), |b| {
            b.iter(|| strip_thread(bodies))
        });
        c.bench_function(&format!("baseline {shape} thread"), |b| {
            b.iter(|| baseline_thread(bodies))
        });
    }
    c.final_summary();
}
