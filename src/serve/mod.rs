//! The HTTP service's routes, to mount in an axum application of your own (cargo feature
//! `serve`): resolve, runs, mail ingest, summaries, erasure and retention, personas, health
//! and metrics, answering the JSON errors `{"error":{"kind":KIND,"message":TEXT}}` of the
//! guide's reference (`docs/src/reference.md`).
//! `protege serve` is this router behind its own connection loop.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let engine = protege::Engine::builder().root(".").build().await?;
//! // protege's routes under `/protege`, beside the application's own.
//! let app = axum::Router::new()
//!     .route("/", axum::routing::get(|| async { "my app" }))
//!     .nest("/protege", protege::serve::router(engine));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, app).await?;
//! # Ok(()) }
//! ```
//!
//! Every route is answered under the per-request deadline and logged with `tracing`;
//! `/v1/*` and `/metrics` ask for the bearer token when one is set ([`Service::token`]).
//! The inspector page (`/ui`, its script and its style sheet) carries no data and is open:
//! its script asks `/v1/*` with the token the user types into the page.

mod error;
mod extract;
mod handlers;
mod jobs;
mod layers;
mod outbox;
mod runs;
mod ui;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{MethodRouter, get, post};

use crate::Engine;
use error::ApiError;

/// The body limit of `POST /v1/resolve`.
const RESOLVE_LIMIT: usize = 64 * 1024;
/// The body limit of `POST /v1/mail`.
const MAIL_LIMIT: usize = 25 * 1024 * 1024;
/// The body limit of `POST /v1/summaries`: a summary of the most bytes in its longest valid
/// JSON encoding (every byte written as a 6-byte `\u0061` escape), and 64 KiB of framing. A
/// summary over [`crate::SUMMARY_MAX_BYTES`] inside this limit is refused after parsing,
/// with the same status.
const SUMMARY_LIMIT: usize = 6 * crate::SUMMARY_MAX_BYTES + 64 * 1024;
/// The body limit of `POST /v1/forget`: an address of the longest length accepted (320
/// characters, 4 bytes each) in its longest JSON encoding (12-byte surrogate-pair escapes),
/// and framing; a longer address inside this limit is refused after parsing (422).
const FORGET_LIMIT: usize = 16 * 1024;
/// The body of an outbox decision, a claim or a delivery report (an edited reply's text
/// goes through `approve`, whose limit is that of a resolve).
const DECISION_LIMIT: usize = 16 * 1024;
/// The body limit of `POST /v1/prune`: a duration, a time and a flag.
const PRUNE_LIMIT: usize = 4 * 1024;
/// The body limit of `POST /v1/diff`: candidate persona files (each at most 1 MiB when
/// loaded) and framing.
const DIFF_LIMIT: usize = 4 * 1024 * 1024;
/// The body limit of `POST /v1/runs/{id}/rounds`: a response and its tool results, each
/// result up to its persona's `[limits] tool_result_bytes` (1 MiB by default) in any JSON
/// encoding.
const ROUND_LIMIT: usize = 64 * 1024 * 1024;

/// The largest body any route takes, in bytes (a round's): a connection that declares more
/// (a chunk of a chunked body larger than this) can be answered 413 at once, before any byte
/// of the body arrives.
pub const MAX_BODY_BYTES: u64 = ROUND_LIMIT as u64;
/// The per-request deadline of [`router`].
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);

/// protege's routes for `engine`, without authentication, with the default deadline and no
/// `/metrics` route: [`Service`] sets those.
pub fn router(engine: Engine) -> Router {
    Service::new(engine).router()
}

/// Renders the metrics text of `/metrics` (Prometheus' text format).
type RenderMetrics = Arc<dyn Fn() -> String + Send + Sync>;

/// The settings of protege's routes: the engine, the bearer token, the deadline, where
/// `/metrics` comes from, and how many requests' work may run at once.
#[derive(Clone)]
#[must_use = "a Service does nothing until `.router()`"]
pub struct Service {
    engine: Engine,
    token: Option<Arc<str>>,
    deadline: Duration,
    metrics: Option<RenderMetrics>,
    work_slots: Arc<tokio::sync::Semaphore>,
}

impl fmt::Debug for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Service")
            .field("engine", &self.engine)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("deadline", &self.deadline)
            .field("metrics", &self.metrics.is_some())
            .field("work_slots", &self.work_slots.available_permits())
            .finish()
    }
}

impl Service {
    /// The routes of `engine`: no token, a deadline of 30 s, no `/metrics`, four requests'
    /// work per core at once.
    pub fn new(engine: Engine) -> Self {
        Self {
            engine,
            token: None,
            deadline: DEFAULT_DEADLINE,
            metrics: None,
            work_slots: Arc::new(tokio::sync::Semaphore::new(work_slots())),
        }
    }

    /// The bearer token `/v1/*` and `/metrics` ask for (`Authorization: Bearer <token>`,
    /// compared in constant time); `None` serves them to anyone.
    pub fn token(mut self, token: Option<String>) -> Self {
        self.token = token.map(Arc::from);
        self
    }

    /// The per-request deadline: a request over it is answered 504 (its work goes on to its
    /// end and the answer is dropped).
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Serves `GET /metrics` with the text `render` returns, e.g. the `render` of a
    /// `metrics-exporter-prometheus` handle. The routes record their metrics through the
    /// `metrics` facade whether or not this is set.
    pub fn metrics(mut self, render: impl Fn() -> String + Send + Sync + 'static) -> Self {
        self.metrics = Some(Arc::new(render));
        self
    }

    /// The router.
    pub fn router(self) -> Router {
        let app = App::from(self);
        let mut routes = Router::new()
            .route("/healthz", get(handlers::healthz))
            .route("/readyz", get(handlers::readyz));
        if app.metrics.is_some() {
            routes = routes.route("/metrics", get(handlers::metrics));
        }
        // Decisions on the tool calls an agent's run waits for (§17).
        #[cfg(feature = "agent")]
        {
            routes = routes
                .route(
                    "/v1/runs/{id}/approve",
                    limited(post(jobs::approve), RESOLVE_LIMIT),
                )
                .route(
                    "/v1/runs/{id}/reject",
                    limited(post(jobs::reject), DECISION_LIMIT),
                )
                .route("/v1/runs/{id}/waiting", get(jobs::waiting));
        }
        let routes = outbox_routes(run_routes(routes));
        routes
            .route("/ui", get(ui::page))
            .route("/ui/app.js", get(ui::script))
            .route("/ui/app.css", get(ui::style))
            .route("/v1/personas", get(handlers::personas))
            .route("/v1/threads", get(handlers::threads))
            .route("/v1/threads/{id}/messages", get(handlers::thread_messages))
            .route(
                "/v1/resolve",
                limited(post(handlers::resolve), RESOLVE_LIMIT),
            )
            .route("/v1/mail", limited(post(handlers::mail), MAIL_LIMIT))
            .route(
                "/v1/summaries",
                limited(post(handlers::summaries), SUMMARY_LIMIT),
            )
            .route("/v1/forget", limited(post(handlers::forget), FORGET_LIMIT))
            .route("/v1/prune", limited(post(handlers::prune), PRUNE_LIMIT))
            .route("/v1/diff", limited(post(handlers::diff), DIFF_LIMIT))
            .route("/v1/agent/jobs", get(jobs::list))
            .route(
                "/v1/agent/jobs/{id}/retry",
                limited(post(jobs::retry), DECISION_LIMIT),
            )
            .fallback(async || ApiError::no_such_route())
            .method_not_allowed_fallback(async || ApiError::method_not_allowed())
            .layer(middleware::from_fn_with_state(
                app.clone(),
                layers::deadline,
            ))
            .layer(middleware::from_fn_with_state(app.clone(), layers::auth))
            .layer(middleware::from_fn(layers::log))
            .with_state(app)
    }
}

/// The routes of runs (§13) added to `routes`: start and list, show, abandon, record a
/// round, and compose the run's reply.
fn run_routes(routes: Router<App>) -> Router<App> {
    routes
        .route(
            "/v1/runs",
            limited(post(runs::start), RESOLVE_LIMIT).get(runs::list),
        )
        .route("/v1/runs/{id}", get(runs::show))
        .route(
            "/v1/runs/{id}/abandon",
            limited(post(runs::abandon), DECISION_LIMIT),
        )
        .route(
            "/v1/runs/{id}/rounds",
            limited(post(runs::record), ROUND_LIMIT),
        )
        .route(
            "/v1/runs/{id}/reply",
            limited(post(outbox::compose), DECISION_LIMIT),
        )
}

/// The routes of the outbox (§18) added to `routes`: list, claim, hold and release, show,
/// and the decisions and outcomes of one reply.
fn outbox_routes(routes: Router<App>) -> Router<App> {
    routes
        .route("/v1/outbox", get(outbox::list))
        .route(
            "/v1/outbox/claim",
            limited(post(outbox::claim), DECISION_LIMIT),
        )
        .route(
            "/v1/outbox/hold",
            limited(post(outbox::hold), DECISION_LIMIT),
        )
        .route(
            "/v1/outbox/release",
            limited(post(outbox::release), DECISION_LIMIT),
        )
        .route("/v1/outbox/{id}", get(outbox::show))
        .route(
            "/v1/outbox/{id}/approve",
            limited(post(outbox::approve), RESOLVE_LIMIT),
        )
        .route(
            "/v1/outbox/{id}/reject",
            limited(post(outbox::reject), DECISION_LIMIT),
        )
        .route(
            "/v1/outbox/{id}/retry",
            limited(post(outbox::retry), DECISION_LIMIT),
        )
        .route(
            "/v1/outbox/{id}/sent",
            limited(post(outbox::sent), DECISION_LIMIT),
        )
        .route(
            "/v1/outbox/{id}/failed",
            limited(post(outbox::failed), DECISION_LIMIT),
        )
}

/// What every handler and layer shares.
#[derive(Clone)]
struct App {
    engine: Engine,
    metrics: Option<RenderMetrics>,
    token: Option<Arc<str>>,
    deadline: Duration,
    /// The slots of the blocking pool that requests' work may take at once (see
    /// [`handlers::off_the_workers`]).
    work_slots: Arc<tokio::sync::Semaphore>,
}

impl From<Service> for App {
    fn from(s: Service) -> Self {
        Self {
            engine: s.engine,
            metrics: s.metrics,
            token: s.token,
            deadline: s.deadline,
            work_slots: s.work_slots,
        }
    }
}

/// A route whose body is capped at `limit` bytes: a `Content-Length` over it is answered 413
/// from the header, before any byte of the body is read.
fn limited(route: MethodRouter<App>, limit: usize) -> MethodRouter<App> {
    route
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn(move |request, next| {
            layers::early_limit(limit, request, next)
        }))
}

/// How many requests' work may run at once on the blocking pool: four per core. Beyond
/// it a request waits for a slot (its deadline still runs), so a burst of connections
/// does not turn into as many threads sharing the cores, each answer slower than the last.
fn work_slots() -> usize {
    std::thread::available_parallelism().map_or(4, |n| n.get() * 4)
}
