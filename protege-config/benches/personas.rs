//! Loading a folder of 1,000 personas against parsing the same files into `toml::Value`
//! only, and the hot-reload latency from a file write to the swapped-in persona.
//!
//! Two folders: personas written from one skeleton, whose templates repeat from file to
//! file (a load compiles each distinct template once), and the same personas with every
//! template made distinct, where nothing is shared.
//!
//! A load reads and parses its files on several threads when there are many; the baseline
//! parses on one. So the report gives both the wall-clock ratio and the ratio of CPU time
//! with every thread counted.
//!
//! `cargo bench -p protege-config --bench personas` prints the load ratios (medians of
//! interleaved runs, and CPU time) and the reload p50/p99 after criterion's own report.

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use protege_config::{Event, PersonaSet};

const FILES: usize = 1000;

fn persona(i: usize, version: usize) -> String {
    persona_with(i, version, "")
}

/// The persona, each template ending with `tail` (a comment, so only the text differs).
fn persona_with(i: usize, version: usize, tail: &str) -> String {
    format!(
        r#"name = "persona-{i}"
instructions = "You are Acme's agent number {i}, version {version}."
addresses = ["agent{i}@acme.test"]

[vars]
company = "Acme"
team = "Support Team {i}"

[model]
provider = "anthropic"
name = "claude-sonnet-4-5"
max_tokens = 1024

[[tools]]
name = "lookup_order"
description = "Find an order by number"
input_schema = {{ type = "object", properties = {{ order = {{ type = "string" }} }}, required = ["order"] }}

[[message_resolvers]]
use = "LoadText"
template = "{{{{ persona.instructions }}}}{tail}"

[[message_resolvers]]
use = "LoadFile"
path = "prompts/{{{{ persona.vars.team | slugify }}}}{tail}.md"

[[message_resolvers]]
use = "LoadRecord"
table = "accounts"
where = {{ email = "{{{{ message.from }}}}{tail}" }}
order_by = ["name", "id desc"]
limit = 3
template = "Customer: {{{{ record.name }}}} ({{{{ record.plan }}}}){tail}"

[[message_resolvers]]
use = "ThreadHistory"
limit = 10
result_limit = 2000

[[responsibilities]]
name = "daily-digest"
schedule = "0 8 * * *"
instructions = "Summarise yesterday's open threads."

[[responsibility_resolvers]]
use = "LoadText"
template = "{{{{ responsibility.instructions }}}}{tail}"
"#
    )
}

/// The folder of `FILES` personas; with `distinct`, no two templates have the same text.
fn folder(distinct: bool) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..FILES {
        let tail = if distinct {
            format!("{{# {i} #}}")
        } else {
            String::new()
        };
        std::fs::write(
            tmp.path().join(format!("p{i:04}.toml")),
            persona_with(i, 0, &tail),
        )
        .unwrap();
    }
    tmp
}

/// The baseline: read every file and parse it into `toml::Value`, nothing more.
fn parse_only(dir: &Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let value: toml::Value = toml::from_str(&text).unwrap();
        n += value.as_table().map_or(0, |t| t.len());
    }
    n
}

fn load(dir: &Path) -> usize {
    let (set, diagnostics) = PersonaSet::load(dir).unwrap();
    assert!(diagnostics.is_empty());
    set.len()
}

fn bench_load(c: &mut Criterion) {
    let shared = folder(false);
    let distinct = folder(true);
    let mut group = c.benchmark_group("load_1000_personas");
    group.sample_size(10);
    group.bench_function("persona_set", |b| b.iter(|| load(shared.path())));
    group.bench_function("toml_value_baseline", |b| {
        b.iter(|| parse_only(shared.path()))
    });
    group.bench_function("persona_set_distinct_templates", |b| {
        b.iter(|| load(distinct.path()))
    });
    group.bench_function("toml_value_baseline_distinct_templates", |b| {
        b.iter(|| parse_only(distinct.path()))
    });
    group.finish();
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// The CPU time this process has used, every thread counted, in clock ticks (Linux's
/// `/proc/self/stat`); `None` elsewhere.
fn cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After the command name in parentheses: state is field 3, utime 14 and stime 15.
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// The CPU time of loading `dir` against parsing it into `toml::Value`, every thread
/// counted: blocks of 20 of each, three times.
fn cpu_ratio(dir: &Path) -> Option<f64> {
    let (mut ours, mut baseline) = (0, 0);
    for _ in 0..3 {
        let start = cpu_ticks()?;
        for _ in 0..20 {
            std::hint::black_box(load(dir));
        }
        let middle = cpu_ticks()?;
        for _ in 0..20 {
            std::hint::black_box(parse_only(dir));
        }
        let end = cpu_ticks()?;
        ours += middle - start;
        baseline += end - middle;
    }
    (baseline > 0).then(|| ours as f64 / baseline as f64)
}

fn report() {
    for (what, distinct) in [("shared", false), ("distinct", true)] {
        let tmp = folder(distinct);
        // Interleaved, so that load from other processes on the machine hits both alike.
        let (mut ours, mut baseline) = (Vec::new(), Vec::new());
        for _ in 0..31 {
            let t = Instant::now();
            std::hint::black_box(load(tmp.path()));
            ours.push(t.elapsed());
            let t = Instant::now();
            std::hint::black_box(parse_only(tmp.path()));
            baseline.push(t.elapsed());
        }
        let (ours, baseline) = (median(ours), median(baseline));
        println!(
            "load {FILES} personas ({what} templates): {:.1} ms, toml::Value only: {:.1} ms, ratio {:.2}x",
            ours.as_secs_f64() * 1e3,
            baseline.as_secs_f64() * 1e3,
            ours.as_secs_f64() / baseline.as_secs_f64()
        );
        match cpu_ratio(tmp.path()) {
            Some(ratio) => println!(
                "  CPU time of the load, every thread counted, against the parse: {ratio:.2}x"
            ),
            None => println!("  CPU time: not measured (no /proc/self/stat)"),
        }
    }

    let tmp = folder(false);
    let (set, _) = PersonaSet::load(tmp.path()).unwrap();
    let mut watch = set.watch().unwrap();
    for _ in 0..set.len() {
        watch.blocking_next();
    }
    let path = tmp.path().join("p0007.toml");
    let mut latencies = Vec::new();
    for version in 1..=100 {
        let expected = format!("You are Acme's agent number 7, version {version}.");
        let start = Instant::now();
        std::fs::write(&path, persona(7, version)).unwrap();
        loop {
            match watch.blocking_next() {
                Some(Event::Reloaded { .. })
                    if set.get("persona-7").unwrap().info.instructions == expected =>
                {
                    break;
                }
                Some(_) => {}
                None => panic!("the watch stopped"),
            }
        }
        latencies.push(start.elapsed());
    }
    latencies.sort();
    println!(
        "reload latency write -> live (debounce {} ms): p50 {:.1} ms, p99 {:.1} ms",
        protege_config::DEFAULT_DEBOUNCE.as_millis(),
        percentile(&latencies, 0.5).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3
    );
}

criterion_group!(benches, bench_load);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report();
}
