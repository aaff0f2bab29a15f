//! The `--explain` table: one row per resolver and a total, on stderr.

use std::fmt::Write as _;
use std::time::Duration;

use protege::Step;
use protege::message;
use protege::tokens::{estimate_message_tokens, message_chars};

/// One row of the table.
struct Row {
    position: String,
    name: String,
    messages: usize,
    chars: usize,
    tokens: usize,
    time: Option<Duration>,
}

/// Renders the table for the chain's `steps`, the trailing user turn (when any) and the
/// total wall time of the chain.
pub(crate) fn table(
    steps: &[Step<'_>],
    user_turn: Option<&protege::Content>,
    chain_time: Duration,
) -> String {
    let mut rows: Vec<Row> = steps
        .iter()
        .map(|s| Row {
            position: s.position.to_string(),
            name: s.name.to_owned(),
            messages: s.messages.len(),
            chars: s.messages.iter().map(message_chars).sum(),
            tokens: s.messages.iter().map(estimate_message_tokens).sum(),
            time: Some(s.elapsed),
        })
        .collect();
    if let Some(content) = user_turn {
        let m = message(protege::Role::User, content.clone());
        rows.push(Row {
            position: "-".into(),
            name: "(trailing user turn)".into(),
            messages: 1,
            chars: message_chars(&m),
            tokens: estimate_message_tokens(&m),
            time: None,
        });
    }
    let total = Row {
        position: String::new(),
        name: "total".into(),
        messages: rows.iter().map(|r| r.messages).sum(),
        chars: rows.iter().map(|r| r.chars).sum(),
        tokens: rows.iter().map(|r| r.tokens).sum(),
        time: Some(chain_time),
    };
    let width = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(8);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>3}  {:<width$}  {:>8}  {:>8}  {:>7}  {:>9}",
        "#", "resolver", "messages", "chars", "tokens", "time"
    );
    for r in rows.iter().chain(std::iter::once(&total)) {
        let time = r
            .time
            .map(|t| format!("{:.2} ms", t.as_secs_f64() * 1000.0))
            .unwrap_or_default();
        let line = format!(
            "{:>3}  {:<width$}  {:>8}  {:>8}  {:>7}  {:>9}",
            r.position, r.name, r.messages, r.chars, r.tokens, time
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str("tokens are estimated as characters / 4, rounded up, plus 4 per message\n");
    out
}
