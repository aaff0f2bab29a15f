//! What several benchmarks share: the 1,000-message reference thread.

use serde_json::{Value, json};

/// The prior messages of the reference thread.
pub(crate) const PRIOR: usize = 1_000;
/// The Message-ID of the message being answered.
pub(crate) const CURRENT: &str = "<current@bench>";

/// The reference thread: 1,000 prior messages of ~2 KB, alternating inbound/outbound, every
/// third inbound with a round of two tool calls (some results ~6,000 characters, a few
/// without result), then the message being answered.
pub(crate) fn reference_thread() -> Value {
    let paragraph = "Thanks for getting back to me. I checked the order page again and the \
        status still says processing, although the confirmation mail said it would ship \
        within two working days. Could you look into it and tell me what is going on? ";
    let mut messages = Vec::with_capacity(PRIOR + 1);
    for i in 0..PRIOR {
        let inbound = i % 2 == 0;
        let mut body = format!("Message {i}.\n\n");
        while body.len() < 2_000 {
            body.push_str(paragraph);
        }
        let minute = i as i64;
        let sent_at = chrono::DateTime::from_timestamp(1_767_225_600 + minute * 60, 0)
            .unwrap()
            .to_rfc3339();
        let mut m = json!({
            "message_id": format!("<m{i}@bench>"),
            "direction": if inbound { "inbound" } else { "outbound" },
            "from": if inbound { "Alice Example <alice@example.com>" } else { "Acme Support <support@acme.test>" },
            "to": [if inbound { "support@acme.test" } else { "Alice Example <alice@example.com>" }],
            "cc": if i % 10 == 0 { json!(["billing@acme.test"]) } else { json!([]) },
            "subject": "Re: Where is my order?",
            "sent_at": sent_at,
            "text_body": body,
        });
        if inbound && (i / 2) % 3 == 0 {
            let long = "x".repeat(6_000);
            let result = |k: usize| -> Value {
                match (i + k) % 7 {
                    0 => Value::Null,
                    1 | 2 => json!(long),
                    _ => json!(format!("{{\"status\":\"shipped\",\"n\":{i}}}")),
                }
            };
            m["tool_uses"] = json!([
                {"run_id": format!("run-{i}"), "turn_index": 0, "position": 0, "tool_call_id": format!("c{i}a"),
                 "name": "lookup_order", "input": {"order": format!("A-{i}")}, "result": result(0)},
                {"run_id": format!("run-{i}"), "turn_index": 0, "position": 1, "tool_call_id": format!("c{i}b"),
                 "name": "get_tracking", "input": {"order": format!("A-{i}")}, "result": result(1)},
            ]);
        }
        messages.push(m);
    }
    messages.push(json!({
        "message_id": CURRENT, "direction": "inbound", "from": "Alice Example <alice@example.com>",
        "to": ["support@acme.test"], "subject": "Re: Where is my order?",
        "sent_at": chrono::DateTime::from_timestamp(1_767_225_600 + PRIOR as i64 * 60, 0).unwrap().to_rfc3339(),
        "text_body": "Any news?",
    }));
    json!({"threads": [{"subject": "Where is my order?", "messages": messages}]})
}
