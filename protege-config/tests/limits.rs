//! Templates are bounded: a runaway loop or an exploding string fails fast with an error
//! naming the persona, the resolver and the template; `[limits]` and `AppConfig` move the
//! budget.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use protege_config::{Persona, Registry};
use protege_core::{AppConfig, Chain, Context, Responsibility, Trigger};

const NESTED_LOOPS: &str =
    "{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}";
/// `set` inside a loop is scoped to the loop body: this doubles nothing that survives.
const DOUBLING_SCOPED: &str =
    "{% set s = \"x\" %}{% for i in range(64) %}{% set s = s ~ s %}{% endfor %}{{ s }}";
/// Through a namespace the string really doubles, 64 times.
const DOUBLING: &str = "{% set ns = namespace(s=\"x\") %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}";
/// The nested loops without output: only fuel stops them.
const NESTED_LOOPS_SILENT: &str =
    "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}";
/// 2 MiB of output for about 400,000 fuel.
const TWO_MIB: &str = "{% for i in range(20000) %}{{ \"x\" * 104 }}{{ \"y\" * 1 }}{% endfor %}";

/// A persona `support` with `limits` (a `[limits]` body, or nothing) whose second
/// responsibility resolver renders `template`.
fn persona(template: &str, limits: &str) -> Persona {
    let limits = if limits.is_empty() {
        String::new()
    } else {
        format!("[limits]\n{limits}\n")
    };
    let source = format!(
        "name = \"support\"\n{limits}\n[[responsibility_resolvers]]\nuse = \"LoadText\"\ntemplate = \"{{{{ persona.name }}}}\"\n\n[[responsibility_resolvers]]\nuse = \"LoadText\"\ntemplate = '''{template}'''\n"
    );
    Persona::parse("personas/support.toml".as_ref(), &source, &Registry::new())
        .unwrap_or_else(|d| panic!("{}", protege_config::render(&d)))
}

/// Runs the persona's scheduled chain under `config` on its own thread, failing the test
/// after 30 s; returns the outcome and how long it took.
fn run(persona: Persona, config: AppConfig) -> (Result<Vec<usize>, String>, Duration) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let ctx = Context::builder(
            persona.info.clone(),
            config,
            Trigger::Responsibility(Responsibility {
                name: "digest".into(),
                schedule: "0 8 * * *".into(),
                instructions: String::new(),
                ..Responsibility::default()
            }),
        )
        .build();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let started = Instant::now();
        let out = runtime.block_on(persona.responsibility_chain.resolve(&ctx));
        let lengths = out
            .map(|messages| {
                messages
                    .iter()
                    .map(|m| {
                        serde_json::to_value(m).unwrap()["content"]
                            .as_str()
                            .unwrap()
                            .len()
                    })
                    .collect()
            })
            .map_err(|e| e.to_string());
        let _ = tx.send((lengths, started.elapsed()));
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the render did not stop within 30 s")
}

#[test]
fn nested_range_loops_stop_at_the_output_cap_or_out_of_fuel() {
    // One `x` per inner iteration: the 1 MiB output cap is reached first.
    let (out, elapsed) = run(persona(NESTED_LOOPS, ""), AppConfig::new("."));
    assert_eq!(
        out.unwrap_err(),
        "resolver 2 `LoadText` failed: template `LoadText.template` of persona `support` exceeded its output limit (`template_output_bytes` limit 1048576)"
    );
    eprintln!("nested loops stopped after {elapsed:?}");
    let (out, elapsed) = run(persona(NESTED_LOOPS_SILENT, ""), AppConfig::new("."));
    assert_eq!(
        out.unwrap_err(),
        "resolver 2 `LoadText` failed: template `LoadText.template` of persona `support` ran out of fuel (`template_fuel` limit 5000000)"
    );
    eprintln!("silent nested loops stopped after {elapsed:?}");
}

#[test]
fn string_doubling_runs_out_of_fuel() {
    let (out, elapsed) = run(persona(DOUBLING, ""), AppConfig::new("."));
    assert_eq!(
        out.unwrap_err(),
        "resolver 2 `LoadText` failed: template `LoadText.template` of persona `support` ran out of fuel (`template_fuel` limit 5000000)"
    );
    eprintln!("string doubling stopped after {elapsed:?}");
    // Without a namespace, `set` in the loop body does not outlive the iteration.
    let (out, _) = run(persona(DOUBLING_SCOPED, ""), AppConfig::new("."));
    assert_eq!(out.unwrap(), [7, 1]);
}

#[test]
fn output_over_the_cap_is_an_error() {
    let (out, _) = run(persona(TWO_MIB, ""), AppConfig::new("."));
    assert_eq!(
        out.unwrap_err(),
        "resolver 2 `LoadText` failed: template `LoadText.template` of persona `support` exceeded its output limit (`template_output_bytes` limit 1048576)"
    );
}

#[test]
fn limits_table_raises_the_output_cap() {
    let (out, _) = run(
        persona(TWO_MIB, "template_output_bytes = 4_194_304"),
        AppConfig::new("."),
    );
    assert_eq!(out.unwrap(), [7, 2_100_000]);
}

#[test]
fn limits_table_lowers_the_fuel() {
    let small = "{% for i in range(1000) %}x{% endfor %}";
    let (out, _) = run(persona(small, ""), AppConfig::new("."));
    assert_eq!(out.unwrap(), [7, 1000]);
    let (out, _) = run(persona(small, "template_fuel = 500"), AppConfig::new("."));
    assert_eq!(
        out.unwrap_err(),
        "resolver 2 `LoadText` failed: template `LoadText.template` of persona `support` ran out of fuel (`template_fuel` limit 500)"
    );
}

#[test]
fn app_config_sets_the_defaults_and_limits_table_wins() {
    let small = "{% for i in range(1000) %}x{% endfor %}";
    let (out, _) = run(persona(small, ""), AppConfig::new(".").template_fuel(500));
    assert_eq!(
        out.unwrap_err(),
        "resolver 2 `LoadText` failed: template `LoadText.template` of persona `support` ran out of fuel (`template_fuel` limit 500)"
    );
    let (out, _) = run(
        persona(small, "template_fuel = 100_000"),
        AppConfig::new(".").template_fuel(500),
    );
    assert_eq!(out.unwrap(), [7, 1000]);
    let (out, _) = run(
        persona(small, ""),
        AppConfig::new(".").template_output_bytes(999),
    );
    assert_eq!(
        out.unwrap_err(),
        "resolver 2 `LoadText` failed: template `LoadText.template` of persona `support` exceeded its output limit (`template_output_bytes` limit 999)"
    );
    let (out, _) = run(
        persona(NESTED_LOOPS, "template_fuel = 20_000_000"),
        AppConfig::new("."),
    );
    assert_eq!(
        out.unwrap_err(),
        "resolver 2 `LoadText` failed: template `LoadText.template` of persona `support` exceeded its output limit (`template_output_bytes` limit 1048576)"
    );
}
