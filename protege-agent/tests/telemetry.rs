//! What a provider call tells operators: one `gen_ai` client span per call with the
//! provider's usage, and a request count and a duration per HTTP attempt.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use common::*;
use protege_agent::ProviderFormat;
use protege_agent::standin::{self, Scripted, StandIn};

/// A closed span: its name and fields.
type Closed = (String, BTreeMap<String, String>);

/// The spans a layer saw close, in order.
#[derive(Default, Clone)]
struct Spans(Arc<Mutex<Vec<Closed>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S> tracing_subscriber::Layer<S> for Spans
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        ctx.span(id).unwrap().extensions_mut().insert(fields);
    }
    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let span = ctx.span(id).unwrap();
        let mut extensions = span.extensions_mut();
        values.record(&mut Fields(
            extensions.get_mut::<BTreeMap<String, String>>().unwrap(),
        ));
    }
    fn on_close(&self, id: tracing::span::Id, ctx: tracing_subscriber::layer::Context<'_, S>) {
        let span = ctx.span(&id).unwrap();
        let fields = span
            .extensions()
            .get::<BTreeMap<String, String>>()
            .cloned()
            .unwrap_or_default();
        self.0
            .lock()
            .unwrap()
            .push((span.name().to_owned(), fields));
    }
}

/// Counters and histogram samples by `name{labels}`.
#[derive(Default, Clone)]
struct Recorder(Arc<Mutex<BTreeMap<String, f64>>>);

struct Handle(Arc<Mutex<BTreeMap<String, f64>>>, String);

impl metrics::CounterFn for Handle {
    fn increment(&self, value: u64) {
        *self.0.lock().unwrap().entry(self.1.clone()).or_default() += value as f64;
    }
    fn absolute(&self, value: u64) {
        self.0.lock().unwrap().insert(self.1.clone(), value as f64);
    }
}

impl metrics::HistogramFn for Handle {
    fn record(&self, _value: f64) {
        *self.0.lock().unwrap().entry(self.1.clone()).or_default() += 1.0;
    }
}

impl Recorder {
    fn handle(&self, key: &metrics::Key) -> Arc<Handle> {
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        Arc::new(Handle(
            self.0.clone(),
            format!("{}{{{}}}", key.name(), labels.join(",")),
        ))
    }
}

impl metrics::Recorder for Recorder {
    fn describe_counter(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_gauge(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_histogram(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn register_counter(&self, key: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
        metrics::Counter::from_arc(self.handle(key))
    }
    fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
        metrics::Gauge::noop()
    }
    fn register_histogram(
        &self,
        key: &metrics::Key,
        _: &metrics::Metadata<'_>,
    ) -> metrics::Histogram {
        metrics::Histogram::from_arc(self.handle(key))
    }
}

#[tokio::test]
async fn each_call_is_a_gen_ai_span_and_each_attempt_is_counted() {
    use tracing_subscriber::layer::SubscriberExt;
    let spans = Spans::default();
    let _tracing =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));
    let recorder = Recorder::default();
    let _metrics = metrics::set_default_local_recorder(&recorder);

    let standin = StandIn::start([
        Scripted::status(500, &[], "oops"),
        Scripted::Json(200, standin::openai_text("Hi.")),
    ])
    .await
    .unwrap();
    let base = standin.base_url();
    let body = openai_body();
    client()
        .call(&call(ProviderFormat::OpenAiChat, &base, &body))
        .await
        .expect("the call succeeds");

    let spans = spans.0.lock().unwrap().clone();
    assert_eq!(spans.len(), 1);
    let (name, fields) = &spans[0];
    assert_eq!(name, "chat");
    let expected: BTreeMap<String, String> = [
        ("otel.name", "chat gpt-4o"),
        ("otel.kind", "client"),
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.system", "openai"),
        ("gen_ai.provider.name", "openai"),
        ("gen_ai.request.model", "gpt-4o"),
        ("gen_ai.response.model", "gpt-4o-2024-08-06"),
        (
            "gen_ai.response.id",
            "chatcmpl-StandIn0000000000000000000000",
        ),
        ("gen_ai.usage.input_tokens", "100"),
        ("gen_ai.usage.output_tokens", "20"),
        ("http.response.status_code", "200"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(fields, &expected);

    let metrics = recorder.0.lock().unwrap().clone();
    let expected: BTreeMap<String, f64> = [
        (
            "protege_provider_requests_total{provider=openai,status=500}",
            1.0,
        ),
        (
            "protege_provider_requests_total{provider=openai,status=200}",
            1.0,
        ),
        ("protege_provider_seconds{provider=openai}", 2.0),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(metrics, expected);
    no_wire_failures(&standin);
}
