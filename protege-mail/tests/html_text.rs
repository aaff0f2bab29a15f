//! HTML to text in linear time: pathological markup converts without a hang or a
//! quadratic blow-up. Each input runs under a 120 s watchdog (no tight timing: a debug
//! build on a busy machine must pass too); `benches/html_text.rs` measures the growth.

use std::sync::mpsc;
use std::time::Duration;

use protege_mail::html_to_text;

const MIB: usize = 1 << 20;

/// Converts `html` on another thread; fails when it takes more than 120 s.
fn convert_with_watchdog(name: &str, html: String) -> String {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(html_to_text(&html));
    });
    rx.recv_timeout(Duration::from_secs(120))
        .unwrap_or_else(|_| panic!("{name}: no result within 120 s"))
}

#[test]
fn ten_mib_of_nested_divs() {
    let depth = 10 * MIB / 11;
    let html = format!("{}deep{}", "<div>".repeat(depth), "</div>".repeat(depth));
    assert_eq!(convert_with_watchdog("nested divs", html), "deep");
}

#[test]
fn a_hundred_thousand_unclosed_list_items() {
    let html = format!("<ul>{}", "<li>item".repeat(100_000));
    let text = convert_with_watchdog("unclosed li", html);
    assert_eq!(text.lines().count(), 100_000);
    assert!(text.lines().all(|l| l == "* item"));
    // Unclosed nested lists of the same size.
    let html = "<ol><li>x".repeat(100_000);
    let text = convert_with_watchdog("unclosed nested ol", html);
    // Lists nested deeper than 128 levels are flattened: their items continue the
    // numbering of the list at level 128.
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 100_000);
    assert!(lines[..128].iter().all(|l| *l == "1. x"));
    assert_eq!(lines[128], "2. x");
    assert_eq!(lines[99_999], "99873. x");
}

#[test]
fn pathological_nested_tables() {
    let depth = 10 * MIB / 40;
    let html = format!(
        "{}cell{}",
        "<table><tr><td>".repeat(depth),
        "</td></tr></table>".repeat(depth)
    );
    assert_eq!(convert_with_watchdog("nested tables", html), "cell");
    // Tables that are never closed, with a cell of text at every level.
    let html = "<table><tr><td>c".repeat(10 * MIB / 20);
    let text = convert_with_watchdog("unclosed tables", html);
    assert_eq!(text.lines().filter(|l| *l == "c").count(), 10 * MIB / 20);
}

#[test]
fn readable_body_rules() {
    assert_eq!(
        html_to_text(
            "<h1>Title</h1><p>One&nbsp;two &lt;3&gt;</p><blockquote>quoted</blockquote>\
             <table><tr><th>Item</th><th>Qty</th></tr><tr><td>A-1</td><td>2</td></tr></table>\
             <ol><li>first<li>second</ol><script>alert(1)</script><style>p{}</style>after"
        ),
        "Title\n\nOne\u{a0}two <3>\n\nquoted\n\nItem\nQty\nA-1\n2\n1. first\n2. second\nafter"
    );
}
