//! `protege::serve::router` mounted inside an application's own axum router, under a prefix:
//! the routes answer there exactly as `protege serve` answers, the token still guards them,
//! and the application's own routes are untouched.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use protege::serve::Service;
use protege::{Engine, Format, ResolveInput};
use tower::ServiceExt as _;

fn project() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shipped personas over a fresh SQLite database holding the demo fixture.
async fn engine(dir: &tempfile::TempDir) -> Engine {
    let engine = Engine::builder()
        .root(project())
        .database(format!(
            "sqlite://{}",
            dir.path().join("router.db").display()
        ))
        .build()
        .await
        .unwrap();
    engine
        .import_fixture(&project().join("examples/data/demo.json"))
        .await
        .unwrap();
    // The application's `customers` table the shipped personas read.
    let sql = std::fs::read_to_string(project().join("examples/data/customers.sql")).unwrap();
    engine.run_sql_script(&sql).await.unwrap();
    engine
}

/// The status and body text of `request` sent to `app`.
async fn send(app: &axum::Router, request: Request<Body>) -> (StatusCode, String) {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

fn resolve_request(token: Option<&str>) -> Request<Body> {
    let mut builder =
        Request::post("/protege/v1/resolve").header(header::CONTENT_TYPE, "application/json");
    if let Some(token) = token {
        builder = builder.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    builder
        .body(Body::from(
            r#"{"persona":"billing","message_id":"<label-1@example.com>","format":"openai","now":"2026-03-10T08:00:00Z"}"#,
        ))
        .unwrap()
}

#[tokio::test]
async fn the_router_answers_under_a_prefix_beside_the_application_s_routes() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir).await;
    let app = axum::Router::new()
        .route("/", axum::routing::get(|| async { "the application" }))
        .nest(
            "/protege",
            Service::new(engine.clone())
                .token(Some("s3cret".into()))
                .router(),
        );

    let get = |uri: &str| Request::get(uri).body(Body::empty()).unwrap();
    assert_eq!(
        send(&app, get("/")).await,
        (StatusCode::OK, "the application".to_owned())
    );
    assert_eq!(
        send(&app, get("/protege/healthz")).await,
        (StatusCode::OK, r#"{"status":"ok"}"#.to_owned())
    );

    // The inspector page carries no data: open under the prefix too, its data routes not.
    let page = app.clone().oneshot(get("/protege/ui")).await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.headers()[header::CACHE_CONTROL], "no-store");
    assert_eq!(
        send(&app, get("/protege/ui/app.js")).await.0,
        StatusCode::OK
    );

    // Nested, the routes keep their protection.
    let unauthorized = (
        StatusCode::UNAUTHORIZED,
        r#"{"error":{"kind":"unauthorized","message":"this route needs `Authorization: Bearer <token>` with the token the service was started with"}}"#.to_owned(),
    );
    assert_eq!(send(&app, resolve_request(None)).await, unauthorized);
    assert_eq!(
        send(&app, resolve_request(Some("wrong"))).await,
        unauthorized
    );
    assert_eq!(
        send(&app, get("/protege/no-such-route")).await,
        unauthorized
    );
    assert_eq!(send(&app, get("/protege/v1/threads")).await, unauthorized);

    // With the token: what `Engine::resolve` gives, as `protege resolve` prints it.
    let expected = engine
        .resolve(
            &ResolveInput::reply("billing", "<label-1@example.com>")
                .format(Format::Openai)
                .now("2026-03-10T08:00:00Z".parse().unwrap()),
        )
        .await
        .unwrap();
    let mut text = serde_json::to_string_pretty(&expected.body).unwrap();
    text.push('\n');
    assert_eq!(
        send(&app, resolve_request(Some("s3cret"))).await,
        (StatusCode::OK, text)
    );
    let not_found = Request::get("/protege/no-such-route")
        .header(header::AUTHORIZATION, "Bearer s3cret")
        .body(Body::empty())
        .unwrap();
    assert_eq!(
        send(&app, not_found).await,
        (
            StatusCode::NOT_FOUND,
            r#"{"error":{"kind":"not_found","message":"no such route; see the routes in docs/src/reference.md"}}"#.to_owned()
        )
    );
}

#[tokio::test]
async fn the_plain_router_serves_without_a_token_and_without_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let app = axum::Router::new().nest("/p", protege::serve::router(engine(&dir).await));
    let request = Request::post("/p/v1/resolve")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(r#"{"persona":"nobody","message_id":"<x@y>"}"#))
        .unwrap();
    assert_eq!(
        send(&app, request).await,
        (
            StatusCode::NOT_FOUND,
            r#"{"error":{"kind":"not_found","message":"unknown persona `nobody`; known personas: `billing`, `digest`, `support`"}}"#.to_owned()
        )
    );
    let metrics = Request::get("/p/metrics").body(Body::empty()).unwrap();
    assert_eq!(send(&app, metrics).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_resolve_and_run_routes_speak_openai_responses() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir).await;
    let app = axum::Router::new().nest("/p", protege::serve::router(engine.clone()));
    let input = r#"{"persona":"billing","message_id":"<label-1@example.com>","format":"openai-responses","now":"2026-03-10T08:00:00Z"}"#;
    let post = |uri: &str, body: String| {
        Request::post(uri)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body))
            .unwrap()
    };
    let expected = engine
        .resolve(
            &ResolveInput::reply("billing", "<label-1@example.com>")
                .format(Format::OpenaiResponses)
                .now("2026-03-10T08:00:00Z".parse().unwrap()),
        )
        .await
        .unwrap()
        .body;
    // `o4-mini` reasons: the body asks for its encrypted reasoning, and keeps no state.
    assert_eq!(
        (&expected["store"], &expected["include"]),
        (
            &serde_json::json!(false),
            &serde_json::json!(["reasoning.encrypted_content"])
        )
    );
    let mut text = serde_json::to_string_pretty(&expected).unwrap();
    text.push('\n');
    assert_eq!(
        send(&app, post("/p/v1/resolve", input.to_owned())).await,
        (StatusCode::OK, text)
    );

    // A run of a message sent to the persona, with the model of the request.
    let input = r#"{"persona":"support","message_id":"<refund-1@example.com>","format":"openai-responses","model":"gpt-5","now":"2026-03-10T08:00:00Z"}"#;
    let expected = engine
        .resolve(&serde_json::from_str(input).unwrap())
        .await
        .unwrap()
        .body;
    let (status, started) = send(&app, post("/p/v1/runs", input.to_owned())).await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    let started: serde_json::Value = serde_json::from_str(&started).unwrap();
    assert_eq!(
        (&started["round"], &started["body"], &expected["model"]),
        (
            &serde_json::json!(0),
            &expected,
            &serde_json::json!("gpt-5")
        )
    );
    let run_id = started["run_id"].as_str().unwrap();
    let refusal: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            project()
                .join("protege-core/tests/fixtures/responses/openai-responses/good-refusal.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let round = serde_json::json!({"round": 0, "response": refusal, "results": []});
    assert_eq!(
        send(&app, post(&format!("/p/v1/runs/{run_id}/rounds"), round.to_string())).await,
        (
            StatusCode::OK,
            concat!(
                "{\n  \"status\": \"stopped\",\n  \"text\": \"I can't help with that request.\",\n",
                "  \"usage\": {\n    \"input\": 31,\n    \"output\": 9,\n    \"cache_read\": 0,\n    \"cache_write\": 0\n  },\n",
                "  \"stop_reason\": \"refusal\"\n}\n"
            )
            .to_owned()
        )
    );
    let shown = engine.run(run_id).await.unwrap();
    assert_eq!(
        (shown.run.format.as_str(), shown.run.status.as_str()),
        ("openai-responses", "stopped")
    );
}
