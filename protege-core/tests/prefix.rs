//! What a prompt cache would serve of consecutive request bodies (the cache report's
//! arithmetic), on hand-written bodies.

use protege_core::Provider;
use protege_core::wire::{Billed, CacheSim, PrefixUnit, cached_tokens, prefix_units};
use serde_json::json;

fn keys(units: &[PrefixUnit]) -> Vec<(String, usize, bool)> {
    units
        .iter()
        .map(|u| (u.key.replace('\0', "|"), u.tokens, u.breakpoint))
        .collect()
}

#[test]
fn anthropic_units_are_tools_system_blocks_then_message_blocks() {
    let body = json!({
        "model": "m", "max_tokens": 5,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "hello"},
                {"type": "text", "text": "again", "cache_control": {"type": "ephemeral"}}
            ]}
        ],
        "tools": [{"name": "t", "description": "d", "input_schema": {"type": "object"}}]
    });
    assert_eq!(
        keys(&prefix_units(&body, Provider::Anthropic)),
        vec![
            (
                r#"tool|true|{"name":"t","description":"d","input_schema":{"type":"object"}}"#
                    .to_owned(),
                16,
                false
            ),
            (
                r#"system|true|{"type":"text","text":"Be brief."}"#.to_owned(),
                9,
                true
            ),
            (
                r#"user|true|{"type":"text","text":"hi"}"#.to_owned(),
                7,
                false
            ),
            (
                r#"assistant|true|{"type":"text","text":"hello"}"#.to_owned(),
                8,
                false
            ),
            (
                r#"assistant|false|{"type":"text","text":"again"}"#.to_owned(),
                8,
                true
            ),
        ]
    );
}

#[test]
fn openai_units_are_tools_then_whole_messages() {
    let body = json!({
        "model": "m",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        "prompt_cache_key": "k"
    });
    assert_eq!(
        keys(&prefix_units(&body, Provider::Openai)),
        vec![
            (
                r#"system|true|{"role":"system","content":"Be brief."}"#.to_owned(),
                10,
                false
            ),
            (
                r#"user|true|{"role":"user","content":"hi"}"#.to_owned(),
                8,
                false
            ),
        ]
    );
}

fn unit(key: &str, tokens: usize, breakpoint: bool) -> PrefixUnit {
    PrefixUnit {
        key: key.to_owned(),
        tokens,
        breakpoint,
        hour: false,
    }
}

#[test]
fn anthropic_serves_up_to_the_last_shared_breakpoint_of_the_previous_request() {
    let previous = [
        unit("s", 10, true),
        unit("a", 20, false),
        unit("b", 30, true),
        unit("c", 40, true),
    ];
    // Shares s, a, b (c differs): served up to b, the previous request's breakpoint.
    let current = [
        unit("s", 10, true),
        unit("a", 20, false),
        unit("b", 30, false),
        unit("x", 5, false),
        unit("y", 5, true),
    ];
    assert_eq!(cached_tokens(&previous, &current, Provider::Anthropic), 60);
    // Shares s and a only: a carries no breakpoint, so only s is served.
    let current = [
        unit("s", 10, true),
        unit("a", 20, false),
        unit("z", 1, true),
    ];
    assert_eq!(cached_tokens(&previous, &current, Provider::Anthropic), 10);
    // Nothing shared, or no previous request: nothing served.
    assert_eq!(
        cached_tokens(&previous, &[unit("q", 3, true)], Provider::Anthropic),
        0
    );
    assert_eq!(cached_tokens(&[], &current, Provider::Anthropic), 0);
    // OpenAI serves the whole shared prefix, breakpoints or not.
    assert_eq!(cached_tokens(&previous, &current, Provider::Openai), 30);
}

#[test]
fn anthropic_finds_a_cached_prefix_only_within_20_blocks_of_a_breakpoint() {
    let previous = [unit("s", 10, true), unit("h", 10, true)];
    let with_gap = |gap: usize| {
        let mut current = vec![unit("s", 10, true), unit("h", 10, false)];
        current.extend((0..gap).map(|i| unit(&format!("n{i}"), 1, false)));
        current.push(unit("end", 1, true));
        current
    };
    // The final breakpoint is 20 blocks after `h`: found.
    assert_eq!(
        cached_tokens(&previous, &with_gap(19), Provider::Anthropic),
        20
    );
    // 21 blocks after `h`: only the system breakpoint's own prefix is found.
    assert_eq!(
        cached_tokens(&previous, &with_gap(20), Provider::Anthropic),
        10
    );
}

fn at(minutes: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::UNIX_EPOCH + chrono::Duration::minutes(minutes)
}

/// System (1,100 tokens, a breakpoint lasting `hour`), one message (50), the final
/// message (`last` tokens, a five-minute breakpoint).
fn request(hour: bool, last: usize) -> Vec<PrefixUnit> {
    vec![
        PrefixUnit {
            hour,
            ..unit("s", 1100, true)
        },
        unit("a", 50, false),
        unit(&format!("q{last}"), last, true),
    ]
}

/// The simulated cache reads what the previous request left while its breakpoint lives,
/// writes up to each breakpoint for its lifetime, and caches no breakpoint under the
/// model's minimum.
#[test]
fn a_simulated_cache_expires_by_the_lifetime_of_each_breakpoint() {
    let mut sim = CacheSim::new(Provider::Anthropic, 1024);
    let billed = |input, cache_read, cache_write_5m, cache_write_1h| Billed {
        input,
        cache_read,
        cache_write_5m,
        cache_write_1h,
        short_breakpoints: 0,
    };
    assert_eq!(
        sim.request(request(true, 20), at(0)),
        billed(0, 0, 20 + 50, 1100)
    );
    // 30 minutes later: the hour-long system breakpoint is alive.
    assert_eq!(
        sim.request(request(true, 30), at(30)),
        billed(0, 1100, 80, 0)
    );
    // Two hours later: nothing is.
    assert_eq!(
        sim.request(request(true, 40), at(150)),
        billed(0, 0, 90, 1100)
    );
    let mut sim = CacheSim::new(Provider::Anthropic, 1024);
    sim.request(request(false, 20), at(0));
    assert_eq!(
        sim.request(request(false, 30), at(30)),
        billed(0, 0, 1180, 0)
    );
    assert_eq!(
        sim.request(request(false, 40), at(34)),
        billed(0, 1100, 90, 0)
    );
    // Under the minimum of 2,048, no breakpoint is cached.
    let mut sim = CacheSim::new(Provider::Anthropic, 2048);
    let b = sim.request(request(false, 20), at(0));
    assert_eq!((b.input, b.short_breakpoints), (1170, 2));
    // OpenAI: the shared prefix, for five minutes, over 1,024 tokens.
    let mut sim = CacheSim::new(Provider::Openai, 1024);
    sim.request(request(false, 20), at(0));
    assert_eq!(
        sim.request(request(false, 30), at(3)),
        billed(30, 1150, 0, 0)
    );
    assert_eq!(
        sim.request(request(false, 40), at(10)),
        billed(1190, 0, 0, 0)
    );
}
