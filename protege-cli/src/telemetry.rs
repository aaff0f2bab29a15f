//! The process's `tracing` subscriber: `serve`'s log lines, and the export of the
//! library's spans with OpenTelemetry OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set.
//!
//! Without the variables no exporter is built and no span is recorded: the commands other
//! than `serve` install no subscriber at all, and `serve`'s log layer takes events only,
//! so the engine's spans stay disabled and cost nothing.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::{Level, Metadata};
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::{LevelFilter, filter_fn};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::commands::{LogFormat, output};

/// The service name of the exported spans when neither `OTEL_SERVICE_NAME` nor
/// `OTEL_RESOURCE_ATTRIBUTES` names one.
const SERVICE_NAME: &str = "protege";

/// The tracer provider of the export, shut down (its spans flushed) before the process
/// exits.
#[derive(Debug)]
pub(crate) struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Exports the spans still buffered and stops the exporter (a no-op without one).
    /// Call it outside the async runtime: the export blocks.
    pub(crate) fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(e) = provider.shutdown()
        {
            let _ = output::err(&format!("warning: cannot export the traces: {e}\n"));
        }
    }
}

/// Installs the subscriber: `serve`'s log lines in `log` format (`None` for the other
/// commands, which log nothing), and the OTLP export when the environment asks for it.
pub(crate) fn init(log: Option<LogFormat>) -> Telemetry {
    let provider = if endpoint_set() {
        match provider() {
            Ok(provider) => Some(provider),
            Err(e) => {
                let _ = output::err(&format!("warning: traces are not exported: {e}\n"));
                None
            }
        }
    } else {
        None
    };
    if log.is_none() && provider.is_none() {
        return Telemetry { provider };
    }
    match provider.as_ref() {
        Some(provider) => {
            let export = tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("protege"))
                .with_location(false)
                .with_tracked_inactivity(false)
                .with_threads(false)
                .with_target(false)
                .with_filter(
                    filter_fn(|meta| meta.target().starts_with("protege"))
                        .with_max_level_hint(LevelFilter::INFO),
                );
            // The spans are on for the export; the log lines keep to events.
            let logs = log.map(|format| {
                log_layer(format)
                    .with_filter(filter_fn(logged).with_max_level_hint(LevelFilter::INFO))
            });
            let _ = tracing_subscriber::registry()
                .with(export)
                .with(logs)
                .try_init();
        }
        None => {
            // Without the export, the filter is global: every span stays off, so a resolve
            // computes nothing for one (a per-layer filter would leave them on).
            let _ = tracing_subscriber::registry()
                .with(log.map(log_layer))
                .with(filter_fn(logged).with_max_level_hint(LevelFilter::INFO))
                .try_init();
        }
    }
    Telemetry { provider }
}

/// The layer of `serve`'s log lines, on stderr, in `format`.
fn log_layer<S>(format: LogFormat) -> Box<dyn tracing_subscriber::Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(false);
    match format {
        LogFormat::Text => layer.boxed(),
        LogFormat::Json => layer
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .boxed(),
    }
}

/// Whether the log lines show `meta`: events (never spans, so a line reads the same with or
/// without the export) up to `INFO`, and only warnings and errors of the exporter itself.
fn logged(meta: &Metadata<'_>) -> bool {
    let level = *meta.level();
    meta.is_event()
        && level <= Level::INFO
        && (level <= Level::WARN || !meta.target().starts_with("opentelemetry"))
}

/// Whether `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set
/// (and not empty).
fn endpoint_set() -> bool {
    [
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ]
    .iter()
    .any(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()))
}

/// The protocol of `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`:
/// `http/json`, or `http/protobuf` (the default); `grpc` is not supported.
fn protocol() -> Result<Protocol, String> {
    let named = [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ]
    .iter()
    .find_map(|var| {
        std::env::var(var)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| (*var, v))
    });
    match named {
        None => Ok(Protocol::HttpBinary),
        Some((var, value)) => match value.trim().to_ascii_lowercase().as_str() {
            "http/protobuf" => Ok(Protocol::HttpBinary),
            "http/json" => Ok(Protocol::HttpJson),
            _ => Err(format!(
                "`{var}` is `{value}`; protege exports over `http/protobuf` or `http/json`"
            )),
        },
    }
}

/// The tracer provider: a batch of spans exported over OTLP/HTTP to the endpoint of the
/// environment (its headers, timeout and compression too), as service `OTEL_SERVICE_NAME`
/// (default `protege`).
fn provider() -> Result<SdkTracerProvider, String> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(protocol()?)
        .build()
        .map_err(|e| e.to_string())?;
    let detected = Resource::builder().build();
    let named = detected
        .get(&opentelemetry::Key::from_static_str("service.name"))
        .is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    let resource = if named {
        detected
    } else {
        Resource::builder().with_service_name(SERVICE_NAME).build()
    };
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}

#[cfg(test)]
mod tests {
    /// Without an export, `serve`'s log lines leave every span off: the engine computes a
    /// span's figures (token counts, a calibration query) only for a span that is on.
    #[test]
    fn without_an_export_spans_are_off_and_events_logged() {
        // An environment that exports is the other case (the `traces` tests).
        if super::endpoint_set() {
            return;
        }
        let telemetry = super::init(Some(crate::commands::LogFormat::Json));
        assert!(telemetry.provider.is_none());
        assert!(tracing::info_span!(target: "protege", "protege.resolve").is_disabled());
        assert!(tracing::event_enabled!(target: "protege", tracing::Level::INFO));
        assert!(!tracing::event_enabled!(target: "protege", tracing::Level::DEBUG));
        telemetry.shutdown();
    }
}
