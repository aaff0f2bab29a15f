//! The `--explain` table: one row per resolver and a total, on stderr.

use std::fmt::Write as _;
use std::time::Duration;

use protege::{MailStats, Resolution};

/// One row of the table.
struct Row {
    position: String,
    name: String,
    messages: usize,
    chars: usize,
    tokens: usize,
    time: Option<Duration>,
    source: String,
}

/// Renders the table for a resolution: one row per resolver, the trailing user turn of a
/// reply run, and the total with the wall time of the chain.
pub(crate) fn table(resolution: &Resolution) -> String {
    let out = resolution;
    let rows: Vec<Row> = out
        .steps
        .iter()
        .map(|s| Row {
            position: if s.position == 0 {
                "-".to_owned()
            } else {
                s.position.to_string()
            },
            name: s.name.clone(),
            messages: s.messages,
            chars: s.chars,
            tokens: s.tokens.unwrap_or_default(),
            time: (s.position != 0).then_some(s.elapsed),
            source: protege::describe_sources(&s.sources),
        })
        .collect();
    let chain_time = out.elapsed;
    let footer = out.describe_tokens();
    let total = Row {
        position: String::new(),
        name: "total".into(),
        messages: rows.iter().map(|r| r.messages).sum(),
        chars: rows.iter().map(|r| r.chars).sum(),
        tokens: rows.iter().map(|r| r.tokens).sum(),
        time: Some(chain_time),
        source: String::new(),
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
        "{:>3}  {:<width$}  {:>8}  {:>8}  {:>7}  {:>9}  source",
        "#", "resolver", "messages", "chars", "tokens", "time"
    );
    for r in rows.iter().chain(std::iter::once(&total)) {
        let time = r
            .time
            .map(|t| format!("{:.2} ms", t.as_secs_f64() * 1000.0))
            .unwrap_or_default();
        let line = format!(
            "{:>3}  {:<width$}  {:>8}  {:>8}  {:>7}  {:>9}  {}",
            r.position, r.name, r.messages, r.chars, r.tokens, time, r.source
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&footer);
    out.push('\n');
    for step in &resolution.steps {
        for note in &step.notes {
            let _ = writeln!(out, "note, {}: {note}", step.name);
        }
        if let Some(line) = mail_line(&step.name, &step.mail) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// The line saying what rendering the mail of one resolver removed or changed (`[mail]`);
/// `None` when it changed nothing.
fn mail_line(name: &str, mail: &MailStats) -> Option<String> {
    let parts: Vec<String> = [
        (mail.quoted_chars, "quoted chars removed"),
        (mail.hidden_chars, "hidden chars dropped"),
        (mail.neutralised_lines, "fence look-alike lines neutralised"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    (!parts.is_empty()).then(|| format!("mail, {name}: {}", parts.join(", ")))
}
