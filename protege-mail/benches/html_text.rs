//! HTML to text at 1, 2, 4 and 8 MiB of five shapes (flat paragraphs, nested `<div>`s,
//! unclosed `<li>`s, hidden and styled elements side by side, nested hidden `<div>`s):
//! `html_to_text` against a hand-written baseline that only strips tags (one pass over
//! the bytes, no entities, no blocks, no styles).
//!
//! `cargo bench -p protege-mail --bench html_text` prints, before criterion's own report,
//! one line per shape and size: the time, the time per MiB (flat when the cost is linear)
//! and the engine/baseline ratio.

mod common;
use common::median;

use std::time::Duration;

use criterion::Criterion;
use protege_mail::html_to_text;

const MIB: usize = 1 << 20;

fn input(shape: &str, bytes: usize) -> String {
    match shape {
        "flat" => "<p>Hello <b>team</b> &amp; thanks, see you.</p>".repeat(bytes / 46),
        "nested-div" => {
            let depth = bytes / 11;
            format!("{}deep{}", "<div>".repeat(depth), "</div>".repeat(depth))
        }
        "hidden-styled" => {
            let unit = "<span style=\"display:none\">x</span><p style=\"color:#fff;background:white\">y</p>";
            unit.repeat(bytes / unit.len())
        }
        "hidden-nested" => {
            let open = "<div style=\"display:none\">";
            let depth = bytes / (open.len() + 6);
            format!("{}deep{}after", open.repeat(depth), "</div>".repeat(depth))
        }
        _ => format!("<ul>{}", "<li>item ".repeat(bytes / 9)),
    }
}

const SHAPES: [&str; 5] = [
    "flat",
    "nested-div",
    "unclosed-li",
    "hidden-styled",
    "hidden-nested",
];

/// The baseline: text outside `<...>`, nothing else.
fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

fn main() {
    for shape in SHAPES {
        for mib in [1, 2, 4, 8] {
            let html = input(shape, mib * MIB);
            let engine = median(5, || html_to_text(&html).len());
            let baseline = median(5, || strip_tags(&html).len());
            println!(
                "html_text {shape} {mib} MiB: {:.1} ms, {:.1} ms per MiB; baseline {:.1} ms, ratio {:.1}x",
                engine.as_secs_f64() * 1e3,
                engine.as_secs_f64() * 1e3 / mib as f64,
                baseline.as_secs_f64() * 1e3,
                engine.as_secs_f64() / baseline.as_secs_f64()
            );
        }
    }
    let mut c = Criterion::default()
        .configure_from_args()
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    for shape in SHAPES {
        let html = input(shape, MIB);
        c.bench_function(&format!("html_to_text {shape} 1 MiB"), |b| {
            b.iter(|| html_to_text(&html))
        });
        c.bench_function(&format!("strip_tags {shape} 1 MiB"), |b| {
            b.iter(|| strip_tags(&html))
        });
    }
    c.final_summary();
}
