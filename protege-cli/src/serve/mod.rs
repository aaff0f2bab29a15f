//! `serve`: the engine's HTTP routes (`protege::serve`) behind a connection loop with
//! timeouts and a cap, the Prometheus exporter, structured logs and a graceful shutdown.

mod chunks;
mod conn;

use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;
use protege::config::Event;
use protege::serve::Service;
use tokio::sync::broadcast;

use crate::commands::{CliResult, Env, Failure, ServeArgs};

/// How long requests in flight may take to finish after SIGTERM/SIGINT.
const DRAIN: Duration = Duration::from_secs(30);
/// Histogram buckets in seconds, from 100 µs to 10 s.
const BUCKETS: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5, 10.0,
];

/// `protege serve`: serves the engine's routes and runs its workers until SIGTERM or
/// SIGINT, then drains them.
pub(crate) async fn run(env: &Env, args: &ServeArgs) -> CliResult {
    let token = token(args)?;
    let metrics = PrometheusBuilder::new()
        .set_buckets(&BUCKETS)
        .and_then(PrometheusBuilder::install_recorder)
        .map_err(|e| Failure::invalid(format!("cannot set up the metrics: {e}")))?;
    let engine = start_engine(env, args).await?;
    let (listener, address) = listen(args, token.is_some()).await?;
    // The signals are caught from here on: a SIGTERM sent once the address is announced
    // drains the service, never kills it.
    let shutdown = shutdown_signal();
    tracing::info!("listening on http://{address}");
    let (stopping_tx, stopping_rx) = tokio::sync::watch::channel(false);
    let workers = Workers::spawn(&engine, args, &stopping_rx);
    let router = Service::new(engine)
        .token(token)
        .deadline(Duration::from_secs_f64(args.deadline))
        .metrics(move || metrics.render())
        .router();
    let limits = limits(args);
    tracing::info!(
        max_connections = limits.max_connections,
        max_connections_per_client = limits.max_per_client,
        "connection caps"
    );
    let drain_limit = async move {
        shutdown.await;
        tracing::info!("shutting down: finishing the requests in flight");
        let _ = stopping_tx.send(true);
        tokio::time::sleep(DRAIN).await;
    };
    tokio::select! {
        () = conn::serve(listener, router, limits, stopping_rx) => {}
        () = drain_limit => tracing::warn!("requests still in flight after 30 s; exiting"),
    }
    workers.drain().await;
    tracing::info!("stopped");
    Ok(())
}

/// The engine `serve` runs, its personas loaded (the invalid ones and those loaded
/// logged) and their reloads logged as they come.
async fn start_engine(env: &Env, args: &ServeArgs) -> CliResult<protege::Engine> {
    let engine = env
        .engine_builder()
        .trusted_authserv_ids(args.trusted_authserv_ids.iter().cloned())
        .watch(!args.no_watch)
        .check_env(args.agent)
        .build()
        .await?;
    // Serving needs the persona folder, watched or not; its invalid files are logged below.
    let _invalid = engine.check()?;
    for problem in engine.diagnostics() {
        tracing::warn!(path = %problem.path().display(), error = %problem, "persona rejected");
    }
    for persona in engine.personas() {
        tracing::info!(persona = persona.name(), path = %persona.path().display(), "persona loaded");
    }
    if let Some(events) = engine.events() {
        tokio::spawn(log_reloads(events));
    }
    Ok(engine)
}

/// The listener on `--listen` and its address. Without a token (`with_token` false) only
/// a loopback address is served, unless `--no-auth` says otherwise.
async fn listen(
    args: &ServeArgs,
    with_token: bool,
) -> CliResult<(tokio::net::TcpListener, std::net::SocketAddr)> {
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| Failure::invalid(format!("cannot listen on `{}`: {e}", args.listen)))?;
    let address = listener
        .local_addr()
        .map_err(|e| Failure::invalid(format!("cannot read the listening address: {e}")))?;
    if !with_token {
        if !args.no_auth && !address.ip().is_loopback() {
            return Err(Failure::usage(format!(
                "`{}` is not a loopback address and `PROTEGE_SERVE_TOKEN` is not set: set a token, or pass `--no-auth` to serve without authentication",
                args.listen
            )));
        }
        tracing::warn!(
            "authentication is off: `/v1/*` and `/metrics` are open to anyone who reaches {address}"
        );
    }
    Ok((listener, address))
}

/// The connection caps and timeouts of `args`; without `--max-connections-per-client`, a
/// quarter of the connections.
fn limits(args: &ServeArgs) -> conn::Limits {
    let max_connections = args
        .max_connections
        .map_or_else(conn::default_max_connections, |n| n as usize);
    conn::Limits {
        header_timeout: Duration::from_secs_f64(args.header_timeout),
        idle_timeout: Duration::from_secs_f64(args.idle_timeout),
        max_connections,
        max_per_client: args
            .max_connections_per_client
            .map_or((max_connections / 4).max(1), |n| n as usize),
    }
}

/// The workers `serve` runs beside its routes; all but the delivery worker only with
/// `--agent`.
struct Workers {
    /// The outbox's delivery worker.
    delivery: tokio::task::JoinHandle<()>,
    /// The agent's worker, running the jobs.
    agent: Option<tokio::task::JoinHandle<()>>,
    /// The responsibilities' slots, fired as they fall due.
    schedules: Option<tokio::task::JoinHandle<()>>,
    /// The personas' inbox sessions.
    inboxes: Option<tokio::task::JoinHandle<()>>,
}

impl Workers {
    /// Starts the workers of `engine` as `args` asks; each stops when `stop` turns true.
    fn spawn(
        engine: &protege::Engine,
        args: &ServeArgs,
        stop: &tokio::sync::watch::Receiver<bool>,
    ) -> Self {
        // The outbox's delivery worker: it sends the replies of the personas with an
        // `[outbox] smtp` server, and stops claiming when the service stops.
        let lease = Duration::from_secs(args.delivery_lease);
        let delivery = tokio::spawn(deliver(engine.clone(), lease, stop.clone()));
        let agent = args.agent.then(|| {
            let lease = Duration::from_secs(args.job_lease);
            tokio::spawn(answer(engine.clone(), lease, stop.clone()))
        });
        // The responsibilities' slots, fired as they fall due; the agent runs their jobs.
        let schedules = args.agent.then(|| {
            let (engine, stop) = (engine.clone(), stop.clone());
            tokio::spawn(async move { engine.run_schedules(SCHEDULE_INTERVAL, stop).await })
        });
        // The personas' mailboxes, each read by one session across the replicas.
        let inboxes = args.agent.then(|| {
            let (engine, stop) = (engine.clone(), stop.clone());
            let lease = Duration::from_secs(args.inbox_lease);
            tokio::spawn(async move {
                engine
                    .run_inboxes(worker_name(), lease, |name| std::env::var(name).ok(), stop)
                    .await;
            })
        });
        Workers {
            delivery,
            agent,
            schedules,
            inboxes,
        }
    }

    /// Waits for each worker to stop, at most [`DRAIN`] each.
    async fn drain(self) {
        // An SMTP exchange in flight finishes (its outcome is recorded) unless it outlasts
        // the drain: its row then stays `sending` until its lease runs out.
        if tokio::time::timeout(DRAIN, self.delivery).await.is_err() {
            tracing::warn!("a delivery still in flight after 30 s; exiting");
        }
        // A job's round in flight finishes; its lease then runs out and another replica
        // resumes the job from its stored rounds.
        if let Some(agent) = self.agent
            && tokio::time::timeout(DRAIN, agent).await.is_err()
        {
            tracing::warn!("an agent job still in flight after 30 s; exiting");
        }
        // Each inbox session gives its folder's lease back, so another replica reads on.
        if let Some(inboxes) = self.inboxes
            && tokio::time::timeout(DRAIN, inboxes).await.is_err()
        {
            tracing::warn!("inbox sessions still closing after 30 s; exiting");
        }
        if let Some(schedules) = self.schedules
            && tokio::time::timeout(DRAIN, schedules).await.is_err()
        {
            tracing::warn!("slots still being fired after 30 s; exiting");
        }
    }
}

/// The outbox's delivery worker until `stop` turns true: it waits for the database (a
/// service whose database is down still starts, and answers 503 meanwhile).
async fn deliver(
    engine: protege::Engine,
    lease: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let name = worker_name();
    let delivery = loop {
        match engine.delivery(name.clone()).await {
            Ok(delivery) => break delivery.lease(lease),
            Err(_) => {
                tokio::select! {
                    () = tokio::time::sleep(DELIVERY_INTERVAL) => {}
                    _ = stop.changed() => return,
                }
            }
        }
        if *stop.borrow() {
            return;
        }
    };
    delivery.run(DELIVERY_INTERVAL, stop).await;
}

/// The agent's worker until `stop` turns true: it claims the jobs of the mail the agent
/// receives and runs them.
async fn answer(
    engine: protege::Engine,
    lease: Duration,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    let agent = match engine.agent(worker_name()) {
        Ok(agent) => agent.lease(lease),
        Err(e) => {
            tracing::error!("the agent cannot start: {e}");
            return;
        }
    };
    agent.run(AGENT_INTERVAL, stop).await;
}

/// How often the agent looks for jobs when it found none.
const AGENT_INTERVAL: Duration = Duration::from_millis(500);

/// How often the responsibilities' due slots are looked for: a slot fires within this of
/// its instant, well inside the minute that `catch_up = "none"` counts as on time.
const SCHEDULE_INTERVAL: Duration = Duration::from_secs(5);

/// How often the delivery worker looks for replies that may leave.
const DELIVERY_INTERVAL: Duration = Duration::from_secs(2);

/// The name of this process's delivery leases: the host's process id and 32 random bits,
/// so two processes (on one host or several) never share one.
fn worker_name() -> String {
    let mut bytes = [0u8; 4];
    let _ = getrandom::fill(&mut bytes);
    format!(
        "serve-{}-{:08x}",
        std::process::id(),
        u32::from_le_bytes(bytes)
    )
}

/// The bearer token of `PROTEGE_SERVE_TOKEN`: none when unset; set but empty is a usage
/// error (it would silently turn authentication off), and so is a token with `--no-auth`.
fn token(args: &ServeArgs) -> CliResult<Option<String>> {
    let token = match std::env::var("PROTEGE_SERVE_TOKEN") {
        Ok(token) if token.is_empty() => {
            return Err(Failure::usage(
                "`PROTEGE_SERVE_TOKEN` is set but empty: set it to the token clients must send, or unset it to serve without authentication",
            ));
        }
        Ok(token) => Some(token),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(_)) => {
            return Err(Failure::usage(
                "`PROTEGE_SERVE_TOKEN` is not valid UTF-8: set it to a token of printable characters",
            ));
        }
    };
    if token.is_some() && args.no_auth {
        return Err(Failure::usage(
            "`--no-auth` and `PROTEGE_SERVE_TOKEN` contradict each other: unset the token or drop `--no-auth`",
        ));
    }
    Ok(token)
}

async fn log_reloads(mut events: broadcast::Receiver<Event>) {
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "persona reload events were missed");
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let outcome = match &event {
            Event::Loaded { .. } => continue,
            Event::Reloaded { .. } => "reloaded",
            Event::Added { .. } => "added",
            Event::Removed { .. } => "removed",
            Event::Rejected { .. } => "rejected",
            _ => "other",
        };
        metrics::counter!("protege_persona_reloads_total", "outcome" => outcome).increment(1);
        match event.error_text() {
            Some(error) => tracing::warn!(
                outcome,
                path = %event.path().display(),
                error,
                "persona reload"
            ),
            None => tracing::info!(
                outcome,
                persona = event.persona().unwrap_or_default(),
                path = %event.path().display(),
                "persona reload"
            ),
        }
    }
}

/// A future that resolves on SIGTERM or SIGINT; SIGTERM is caught from the call on.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    // Registered now, awaited later: a signal that comes in between is kept.
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    async move {
        #[cfg(unix)]
        let terminate = async {
            match terminate {
                Some(mut signal) => {
                    signal.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        #[cfg(not(unix))]
        let terminate = std::future::pending::<()>();
        tokio::select! {
            _ = interrupt => {}
            () = terminate => {}
        }
    }
}
