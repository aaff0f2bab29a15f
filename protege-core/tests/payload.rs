//! The canonical JSON of the payload and `Request::validate`.

use protege_core::{Content, Message, Part, Request, Role, ToolCall, ToolDef, message};
use serde_json::json;

fn call(id: &str) -> ToolCall {
    ToolCall::new(id, "lookup_order", json!({"order": "A-1"}))
}

#[test]
fn canonical_json_of_every_message_shape() {
    let messages = vec![
        message(Role::System, "You are..."),
        message(
            Role::User,
            vec![
                Part::text("see attached"),
                Part::Image {
                    media_type: "image/png".into(),
                    data: "iVBOR".into(),
                },
                Part::Document {
                    filename: "a.pdf".into(),
                    media_type: "application/pdf".into(),
                    data: "JVBER".into(),
                },
            ],
        ),
        message(Role::Assistant, "").with_tool_call(call("call_1")),
        message(Role::Tool, r#"{"status":"shipped"}"#).with_tool_call_id("call_1"),
    ];
    let request = Request {
        messages,
        tools: vec![],
        ..Default::default()
    };
    let text = serde_json::to_string(&request).unwrap();
    assert_eq!(
        text,
        concat!(
            r#"{"messages":[{"role":"system","content":"You are..."},"#,
            r#"{"role":"user","content":[{"type":"text","text":"see attached"},"#,
            r#"{"type":"image","media_type":"image/png","data":"iVBOR"},"#,
            r#"{"type":"document","filename":"a.pdf","media_type":"application/pdf","data":"JVBER"}]},"#,
            r#"{"role":"assistant","content":"","tool_calls":[{"id":"call_1","name":"lookup_order","input":{"order":"A-1"}}]},"#,
            r#"{"role":"tool","tool_call_id":"call_1","content":"{\"status\":\"shipped\"}"}],"tools":[]}"#
        )
    );
    let back: Request = serde_json::from_str(&text).unwrap();
    assert_eq!(back, request);
    assert_eq!(serde_json::to_string(&back).unwrap(), text);
}

#[test]
fn tools_always_serialised() {
    let request = Request {
        messages: vec![],
        tools: vec![ToolDef {
            name: "t".into(),
            description: "d".into(),
            input_schema: json!({"type": "object"}),
        }],
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_string(&request).unwrap(),
        r#"{"messages":[],"tools":[{"name":"t","description":"d","input_schema":{"type":"object"}}]}"#
    );
    let empty: Request = serde_json::from_str(r#"{"messages":[]}"#).unwrap();
    assert_eq!(
        serde_json::to_string(&empty).unwrap(),
        r#"{"messages":[],"tools":[]}"#
    );
}

#[test]
fn parts_normalises_string_content() {
    let m = message(Role::User, "hello");
    assert_eq!(m.parts(), vec![Part::text("hello")]);
    let empty = message(Role::Assistant, "");
    assert_eq!(empty.content, Content::Text(String::new()));
    assert_eq!(empty.parts(), vec![Part::text("")]);
}

fn check(messages: Vec<Message>) -> String {
    Request {
        messages,
        tools: vec![],
        ..Default::default()
    }
    .validate()
    .map(|_| "ok".to_owned())
    .unwrap_or_else(|e| e.to_string())
}

#[test]
fn well_formed_rounds_pass() {
    assert_eq!(
        check(vec![
            message(Role::User, "q"),
            message(Role::Assistant, "").with_tool_calls(vec![call("a"), call("b")]),
            message(Role::Tool, "1").with_tool_call_id("b"),
            message(Role::Tool, "2").with_tool_call_id("a"),
            message(Role::Assistant, "done"),
        ]),
        "ok"
    );
}

#[test]
fn lone_tool_message() {
    assert_eq!(
        check(vec![message(Role::Tool, "x").with_tool_call_id("c")]),
        "message 0: tool message `c` does not follow an assistant message with tool calls"
    );
}

#[test]
fn tool_message_after_a_user_turn() {
    assert_eq!(
        check(vec![
            message(Role::Assistant, "").with_tool_call(call("c")),
            message(Role::User, "interruption"),
            message(Role::Tool, "x").with_tool_call_id("c"),
        ]),
        "message 0: tool call `c` is never answered by a tool message right after it"
    );
    let all = Request {
        messages: vec![
            message(Role::Assistant, "").with_tool_call(call("c")),
            message(Role::User, "interruption"),
            message(Role::Tool, "x").with_tool_call_id("c"),
        ],
        tools: vec![],
        ..Default::default()
    }
    .violations();
    assert_eq!(
        all,
        vec![
            "message 0: tool call `c` is never answered by a tool message right after it",
            "message 2: tool message `c` does not follow an assistant message with tool calls",
        ]
    );
}

#[test]
fn unanswered_call() {
    assert_eq!(
        check(vec![
            message(Role::Assistant, "").with_tool_calls(vec![call("a"), call("b")]),
            message(Role::Tool, "1").with_tool_call_id("a"),
        ]),
        "message 0: tool call `b` is never answered by a tool message right after it"
    );
}

#[test]
fn call_answered_twice() {
    assert_eq!(
        check(vec![
            message(Role::Assistant, "").with_tool_call(call("a")),
            message(Role::Tool, "1").with_tool_call_id("a"),
            message(Role::Tool, "2").with_tool_call_id("a"),
        ]),
        "message 2: tool call `a` is answered more than once"
    );
}

#[test]
fn unknown_tool_call_id() {
    assert_eq!(
        check(vec![
            message(Role::Assistant, "").with_tool_call(call("a")),
            message(Role::Tool, "1").with_tool_call_id("a"),
            message(Role::Tool, "2").with_tool_call_id("zzz"),
        ]),
        "message 2: tool message answers unknown call `zzz` (not among the calls of message 0)"
    );
}

#[test]
fn tool_call_id_on_a_non_tool_message() {
    assert_eq!(
        check(vec![message(Role::User, "hi").with_tool_call_id("a")]),
        "message 0: `tool_call_id` is only allowed on tool messages, not on a user message"
    );
}

#[test]
fn tool_calls_on_a_non_assistant_message() {
    assert_eq!(
        check(vec![message(Role::User, "hi").with_tool_call(call("a"))]),
        "message 0: `tool_calls` is only allowed on assistant messages, not on a user message"
    );
}

#[test]
fn tool_message_without_id() {
    assert_eq!(
        check(vec![
            message(Role::Assistant, "").with_tool_call(call("a")),
            message(Role::Tool, "1"),
        ]),
        "message 1: a tool message must have a `tool_call_id`"
    );
}

#[test]
fn duplicate_call_ids_in_one_message() {
    assert_eq!(
        check(vec![
            message(Role::Assistant, "").with_tool_calls(vec![call("a"), call("a")]),
            message(Role::Tool, "1").with_tool_call_id("a"),
        ]),
        "message 0: tool call id `a` is used twice"
    );
}

#[test]
fn build_request_appends_the_user_turn_and_validates() {
    let req = protege_core::build_request(
        Some("question".into()),
        vec![],
        vec![message(Role::System, "s")],
    )
    .unwrap();
    assert_eq!(
        serde_json::to_string(&req).unwrap(),
        r#"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"question"}],"tools":[]}"#
    );
    let err = protege_core::build_request(
        None,
        vec![],
        vec![message(Role::Tool, "x").with_tool_call_id("c")],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "message 0: tool message `c` does not follow an assistant message with tool calls"
    );
}
