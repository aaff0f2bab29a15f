//! The provider stand-in itself: what it does past its script and off its paths, that its
//! wirecheck reports a malformed exchange, and that its answer builders are answers protege
//! reads.

mod common;

use common::*;
use protege_agent::ProviderFormat;
use protege_agent::standin::{self, Scripted, StandIn};
use serde_json::{Value, json};

#[tokio::test]
async fn the_stand_in_reports_what_wirecheck_refuses() {
    if std::env::var_os("PROTEGE_WIRECHECK").is_none() {
        return;
    }
    // A request without `max_tokens`, answered with a `tool_use` stop without a call, twice.
    let mut answer = standin::anthropic_text("Hi.");
    answer["stop_reason"] = json!("tool_use");
    let standin = StandIn::start([
        Scripted::Json(200, answer.clone()),
        Scripted::Json(200, answer),
    ])
    .await
    .unwrap()
    .without_wire_out();
    let base = standin.base_url();
    let mut body = anthropic_body();
    body.as_object_mut().unwrap().remove("max_tokens");
    for _ in 0..2 {
        client()
            .call(&call(ProviderFormat::Anthropic, &base, &body))
            .await
            .expect("the stand-in answers 200");
    }
    let stop = r#"$.stop_reason: stop_reason is "tool_use" but content has no tool_use block [tool-use-stop]"#;
    assert_eq!(
        standin.wire_failures(),
        [
            r#"request 1 to /v1/messages: wirecheck anthropic: $: missing required property "max_tokens" [schema]"#.to_owned(),
            "request 1 to /v1/messages: wirecheck anthropic: $: max_tokens is required [max-tokens]".to_owned(),
            r#"request 2 to /v1/messages: wirecheck anthropic: $: missing required property "max_tokens" [schema]"#.to_owned(),
            "request 2 to /v1/messages: wirecheck anthropic: $: max_tokens is required [max-tokens]".to_owned(),
            format!("answer 1 from /v1/messages: wirecheck anthropic-response: {stop}"),
            format!("answer 2 from /v1/messages: wirecheck anthropic-response: {stop}"),
        ]
    );
    // Checked once: nothing is left for the next call, nor for the drop.
    assert_eq!(standin.wire_failures(), Vec::<String>::new());
}

#[tokio::test]
async fn the_stand_in_checks_responses_requests_and_answers_with_their_modes() {
    if std::env::var_os("PROTEGE_WIRECHECK").is_none() {
        return;
    }
    // A request whose output answers no call, answered with a call of cut-off arguments.
    let mut answer = standin::openai_responses_function_calls(&[("lookup_order", json!({}))]);
    answer["output"][1]["arguments"] = json!("{\"order\":");
    let standin = StandIn::start([Scripted::Json(200, answer)])
        .await
        .unwrap()
        .without_wire_out();
    let base = standin.base_url();
    let mut body = openai_responses_body();
    body["input"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "function_call_output", "call_id": "call_nope", "output": "x"}));
    client()
        .call(&call(ProviderFormat::OpenAiResponses, &base, &body))
        .await
        .expect("the stand-in answers 200");
    assert_eq!(
        standin.wire_failures(),
        [
            r#"request 1 to /v1/responses: wirecheck openai-responses: $.input[1].call_id: function_call_output answers "call_nope", but no function_call in input has that call_id (and there is no previous_response_id or conversation to hold it) [call-output-orphan]"#,
            r#"answer 1 from /v1/responses: wirecheck openai-responses-response: $.output[1].arguments: arguments is not valid JSON (Expecting value: line 1 column 10 (char 9)): "{\"order\":" [tool-arguments-json]"#,
        ]
    );
}

#[tokio::test]
async fn the_stand_in_answers_past_its_script_and_off_its_paths() {
    let standin = StandIn::start([]).await.unwrap();
    // A plain client works: starting the stand-in installed the process's crypto provider.
    let http = reqwest::Client::new();
    let unscripted = http
        .post(format!("{}/v1/messages", standin.base_url()))
        .body(anthropic_body().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(unscripted.status(), 500);
    assert_eq!(
        unscripted.text().await.unwrap(),
        r#"{"error":"the stand-in's script has no answer for request 1"}"#
    );
    let elsewhere = http
        .post(format!("{}/v1/embeddings", standin.base_url()))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(elsewhere.status(), 404);
    assert_eq!(
        elsewhere.text().await.unwrap(),
        r#"{"error":"the stand-in has no route `/v1/embeddings`"}"#
    );
    let paths: Vec<String> = standin.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/v1/messages", "/v1/embeddings"]);
}

#[tokio::test]
async fn the_answer_builders_are_answers_protege_reads() {
    use protege_core::wire::{
        Outcome, Usage, from_anthropic_response, from_openai_response,
        from_openai_responses_response,
    };
    let calls = [
        ("lookup_order", json!({"order": "A1"})),
        ("issue_refund", json!({"order": "A1", "cents": 500})),
    ];
    let usage = Usage {
        input: 100,
        output: 20,
        cache_read: 0,
        cache_write: 0,
        cache_write_1h: 0,
    };
    let standin = StandIn::start([
        Scripted::Json(200, standin::anthropic_tool_use(&calls)),
        Scripted::Json(200, standin::anthropic_text("Refunded.")),
        Scripted::Json(200, standin::openai_tool_calls(&calls)),
        Scripted::Json(200, standin::openai_text("Refunded.")),
        Scripted::Json(200, standin::openai_responses_function_calls(&calls)),
        Scripted::Json(200, standin::openai_responses_text("Refunded.")),
    ])
    .await
    .unwrap();
    let base = standin.base_url();
    let (anthropic, openai, responses) = (anthropic_body(), openai_body(), openai_responses_body());
    let mut parsed = Vec::new();
    for _ in 0..2 {
        let reply = client()
            .call(&call(ProviderFormat::Anthropic, &base, &anthropic))
            .await
            .unwrap();
        parsed.push(from_anthropic_response(&serde_json::to_vec(&reply.body).unwrap()).unwrap());
    }
    for _ in 0..2 {
        let reply = client()
            .call(&call(ProviderFormat::OpenAiChat, &base, &openai))
            .await
            .unwrap();
        parsed.push(from_openai_response(&serde_json::to_vec(&reply.body).unwrap()).unwrap());
    }
    for _ in 0..2 {
        let reply = client()
            .call(&call(ProviderFormat::OpenAiResponses, &base, &responses))
            .await
            .unwrap();
        let body = serde_json::to_vec(&reply.body).unwrap();
        parsed.push(from_openai_responses_response(&body).unwrap());
    }
    let ids = [
        [standin::anthropic_call_id(0), standin::anthropic_call_id(1)],
        [standin::openai_call_id(0), standin::openai_call_id(1)],
        [standin::openai_call_id(0), standin::openai_call_id(1)],
    ];
    for (i, response) in parsed.iter().enumerate() {
        assert_eq!(response.usage, usage, "answer {i}");
        if i % 2 == 0 {
            assert_eq!(response.outcome, Outcome::ToolCalls, "answer {i}");
            let got: Vec<(String, String, Value)> = response
                .message
                .tool_calls
                .iter()
                .map(|c| (c.id.clone(), c.name.clone(), c.input.clone()))
                .collect();
            let want: Vec<(String, String, Value)> = ids[i / 2]
                .iter()
                .zip(&calls)
                .map(|(id, (name, input))| (id.clone(), (*name).to_owned(), input.clone()))
                .collect();
            assert_eq!(got, want, "answer {i}");
        } else {
            assert_eq!(response.outcome, Outcome::Done, "answer {i}");
            assert_eq!(response.message.tool_calls, Vec::new(), "answer {i}");
        }
    }
    assert_eq!(
        parsed
            .iter()
            .map(|r| r.stop_reason.as_str())
            .collect::<Vec<_>>(),
        [
            "tool_use",
            "end_turn",
            "tool_calls",
            "stop",
            "completed",
            "completed"
        ]
    );
    // A Responses answer carries its encrypted reasoning to the next round.
    let reasoning: Vec<&Value> = parsed[4..]
        .iter()
        .map(|r| &r.output[0]["encrypted_content"])
        .collect();
    assert_eq!(
        reasoning,
        [
            &json!(standin::OPENAI_REASONING_CONTENT),
            &json!(standin::OPENAI_REASONING_CONTENT)
        ]
    );
    no_wire_failures(&standin);
}
