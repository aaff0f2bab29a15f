//! The cache report: every reply run of a thread, and what a provider's prompt cache
//! would serve of each request after the one before it.

use chrono::{DateTime, Utc};
use protege_core::db::entities::message;
use protege_core::wire::{Billed, CacheSim, ModelSpec, cached_tokens, prefix_units};
use protege_core::{
    CacheTtl, Direction, Prices, Provider, Request, TTL_GAPS, hour_pays, min_cacheable_tokens,
};
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use super::{Engine, EngineError, EngineErrorKind, Format, ResolveInput};

/// One reply run of a [`CacheReport`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheReportRow {
    /// The inbound message answered.
    pub message_id: String,
    /// When it was sent: the time of the request in the simulation.
    pub sent_at: DateTime<Utc>,
    /// The request's input tokens.
    pub input_tokens: usize,
    /// The tokens of the prefix it shares with the previous request, up to where the
    /// provider caches (what a prompt cache would serve, whenever it came).
    pub cached_tokens: usize,
    /// How the simulated cache bills the request with the persona's `cache_ttl`, sent at
    /// `sent_at`: read, written and uncached tokens, and the breakpoints under the
    /// model's minimum cacheable length.
    pub billed: Billed,
}

/// What a prompt cache would serve over a thread: one row per inbound message, oldest
/// first. Made by [`Engine::cache_report`]; `Display` prints the table of
/// `protege cache-report`.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheReport {
    /// The persona.
    pub persona: String,
    /// The thread's id.
    pub thread_id: i64,
    /// The wire format the requests were encoded in.
    pub provider: Provider,
    /// The model of the requests.
    pub model: String,
    /// Its prices (the shipped table's, under the persona's `[model] prices`); `None` when
    /// neither knows the model.
    pub prices: Option<Prices>,
    /// The persona's `cache_ttl`.
    pub cache_ttl: CacheTtl,
    /// The fewest tokens the provider caches for the model.
    pub min_tokens: usize,
    /// One row per reply run, oldest first.
    pub rows: Vec<CacheReportRow>,
    /// The thread's requests billed by the simulated cache with each `cache_ttl` (`auto`,
    /// `5m`, `1h`; OpenAI bodies carry none, so the three are the same).
    pub by_ttl: Vec<(CacheTtl, Billed)>,
}

impl CacheReport {
    /// The input tokens of every request.
    pub fn input_tokens(&self) -> usize {
        self.rows.iter().map(|r| r.input_tokens).sum()
    }

    /// The tokens a prompt cache would serve, over every request.
    pub fn cached_tokens(&self) -> usize {
        self.rows.iter().map(|r| r.cached_tokens).sum()
    }

    /// The share of input tokens served from cache (0 when there is no input).
    pub fn cached_fraction(&self) -> f64 {
        match self.input_tokens() {
            0 => 0.0,
            input => self.cached_tokens() as f64 / input as f64,
        }
    }

    /// The input cost in USD of the thread's requests with `ttl` (`None` without prices).
    pub fn cost(&self, ttl: CacheTtl) -> Option<f64> {
        let prices = self.prices.as_ref()?;
        let (_, billed) = self.by_ttl.iter().find(|(t, _)| *t == ttl)?;
        Some(billed.cost(prices))
    }

    /// The input cost in USD of the thread's requests with no cache: every token at the
    /// input price.
    pub fn uncached_cost(&self) -> Option<f64> {
        let prices = self.prices.as_ref()?;
        Some(Prices::cost(self.input_tokens() as u64, prices.input))
    }
}

pub(super) fn percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        "-".to_owned()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// An amount of USD as the reports print it: `$` and four decimals.
pub(super) fn dollars(amount: f64) -> String {
    // A loss is `-$0.0365`; an amount that rounds to nothing is `$0.0000`, never signed.
    if amount < 0.0 && (amount * 1e4).round() != 0.0 {
        format!("-${:.4}", -amount)
    } else {
        format!("${:.4}", amount.abs())
    }
}

/// A price per million tokens without trailing zeros.
fn price(p: f64) -> String {
    let text = format!("{p:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Writes one line of the cache report's table: its seven cells in their columns, the
/// message column `width` wide, without trailing spaces.
fn table_line(f: &mut std::fmt::Formatter<'_>, width: usize, cells: [&str; 7]) -> std::fmt::Result {
    let [n, message, input, cached, share, cost, note] = cells;
    let text = format!(
        "  {n:>3}  {message:<width$}  {input:>8}  {cached:>8}  {share:>7}  {cost:>9}  {note}"
    );
    writeln!(f, "{}", text.trim_end())
}

/// Writes one line of the cache report's costs: `label`, `cost`, and what it saves against
/// `uncached` (but on the line of the cost without caching).
fn cost_line(
    f: &mut std::fmt::Formatter<'_>,
    label: &str,
    cost: f64,
    uncached: f64,
) -> std::fmt::Result {
    let saved = if label == "without caching" {
        String::new()
    } else {
        format!("  saved {}", dollars(uncached - cost))
    };
    writeln!(f, "  {label:<20}{:>10}{saved}", dollars(cost))
}

impl CacheReport {
    /// The cost of `billed` as the table prints it: `-` without prices.
    fn billed_cost(&self, billed: &Billed) -> String {
        self.prices
            .as_ref()
            .map_or_else(|| "-".to_owned(), |p| dollars(billed.cost(p)))
    }

    /// The note of a row billed `billed`: the breakpoints under the minimum cacheable
    /// length, if any.
    fn note(&self, billed: &Billed) -> String {
        match (self.provider, billed.short_breakpoints) {
            (_, 0) => String::new(),
            (Provider::Openai, _) => format!("not cached: under {} tokens", self.min_tokens),
            (Provider::Anthropic, n) => format!(
                "not cached: {n} {} under {} tokens",
                if n == 1 { "breakpoint" } else { "breakpoints" },
                self.min_tokens
            ),
        }
    }

    /// Writes the table: the titles, one line per reply run and the total.
    fn write_table(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let width = self
            .rows
            .iter()
            .map(|r| r.message_id.chars().count())
            .max()
            .unwrap_or(0)
            .max("message".len());
        table_line(
            f,
            width,
            ["#", "message", "input", "cached", "cached%", "cost", ""],
        )?;
        let mut total = Billed::default();
        for (i, r) in self.rows.iter().enumerate() {
            total.add(&r.billed);
            table_line(
                f,
                width,
                [
                    &(i + 1).to_string(),
                    &r.message_id,
                    &r.input_tokens.to_string(),
                    &r.cached_tokens.to_string(),
                    &percent(r.cached_tokens, r.input_tokens),
                    &self.billed_cost(&r.billed),
                    &self.note(&r.billed),
                ],
            )?;
        }
        table_line(
            f,
            width,
            [
                "",
                "total",
                &self.input_tokens().to_string(),
                &self.cached_tokens().to_string(),
                &percent(self.cached_tokens(), self.input_tokens()),
                &self.billed_cost(&total),
                "",
            ],
        )
    }

    /// Writes the costs: the prices they are at, then the thread's cost with each
    /// `cache_ttl` (with caching, for OpenAI bodies) and without caching; or why there
    /// is no cost.
    fn write_costs(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(p) = &self.prices else {
            return writeln!(
                f,
                "cost: no price for model `{}`: set `[model] prices` (USD per million tokens)",
                self.model
            );
        };
        let uncached = self.uncached_cost().unwrap_or_default();
        match self.provider {
            Provider::Anthropic => {
                writeln!(
                    f,
                    "cost = the input cost in USD at `{}`'s prices per million tokens (input {}, cache read {}, write 5m {}, write 1h {}), \
                     each request sent when its message was, with the persona's `cache_ttl = \"{}\"`; \
                     the thread with each cache_ttl, and what it saves against no caching:",
                    self.model,
                    price(p.input),
                    price(p.cache_read),
                    price(p.cache_write_5m),
                    price(p.cache_write_1h),
                    self.cache_ttl.as_str()
                )?;
                for ttl in [CacheTtl::Auto, CacheTtl::FiveMinutes, CacheTtl::OneHour] {
                    let label = format!("cache_ttl = \"{}\"", ttl.as_str());
                    cost_line(f, &label, self.cost(ttl).unwrap_or_default(), uncached)?;
                }
            }
            Provider::Openai => {
                writeln!(
                    f,
                    "cost = the input cost in USD at `{}`'s prices per million tokens (input {}, cached input {}), \
                     each request sent when its message was; openai bodies carry no cache lifetime: \
                     a prefix is kept {} minutes after its last use",
                    self.model,
                    price(p.input),
                    price(p.cache_read),
                    protege_core::wire::OPENAI_RETENTION_MINUTES
                )?;
                cost_line(
                    f,
                    "with caching",
                    self.cost(self.cache_ttl).unwrap_or_default(),
                    uncached,
                )?;
            }
        }
        cost_line(f, "without caching", uncached, uncached)
    }
}

impl std::fmt::Display for CacheReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let provider = self.provider.as_str();
        writeln!(
            f,
            "cache report: persona `{}`, thread {}, {provider} bodies, {} reply {}",
            self.persona,
            self.thread_id,
            self.rows.len(),
            if self.rows.len() == 1 { "run" } else { "runs" }
        )?;
        self.write_table(f)?;
        self.write_costs(f)?;
        write!(
            f,
            "tokens are estimated as characters / 4 of each block's JSON, rounded up; \
             a request is served from cache up to the longest prefix it shares with the previous one"
        )?;
        match self.provider {
            Provider::Anthropic => write!(f, " that ends at one of its breakpoints"),
            Provider::Openai => Ok(()),
        }
    }
}

impl Engine {
    /// Resolves the reply run of `persona` for every inbound message of thread
    /// `thread_id`, oldest first, each at the time the message was sent, encodes each
    /// request in `format` (`openai`, `openai-responses`, `anthropic`, or `provider` for the
    /// persona's own),
    /// and reports for each its input tokens and the tokens of the prefix it shares with
    /// the previous request up to where the provider caches, and what a prompt cache
    /// would bill of it with each `cache_ttl`, each request sent when its message was.
    pub async fn cache_report(
        &self,
        persona: &str,
        thread_id: i64,
        format: Format,
    ) -> Result<CacheReport, EngineError> {
        self.cache_report_with_model(persona, thread_id, format, None)
            .await
    }

    /// [`cache_report`](Self::cache_report) with the model of every request: `model`
    /// overrides the persona's `[model] name` (the command line's `--model`), as
    /// [`ResolveInput::model`] does.
    pub async fn cache_report_with_model(
        &self,
        persona: &str,
        thread_id: i64,
        format: Format,
        model: Option<&str>,
    ) -> Result<CacheReport, EngineError> {
        let info = self.require_persona(persona)?.info().clone();
        let wire = report_wire(persona, info.model.as_ref(), format)?;
        let provider = match wire {
            Format::Anthropic => Provider::Anthropic,
            _ => Provider::Openai,
        };
        let conn = self.db().await?;
        let messages = protege_core::db::thread_inbound_messages(conn, thread_id)
            .await?
            .ok_or_else(|| {
                EngineError::new(
                    EngineErrorKind::NotFound,
                    format!("unknown thread `{thread_id}`: no thread with this id in the database"),
                )
            })?;
        let spec = ModelSpec::resolve(info.model.as_ref(), model)?;
        let overrides = info.model.as_ref().and_then(|m| m.prices);
        let prices = Prices::resolve(&spec.name, overrides.as_ref());
        let min_tokens = min_cacheable_tokens(&spec.name, provider);
        let mut sims = TtlSims::new(provider, wire, min_tokens);
        let times: Vec<DateTime<Utc>> = messages.iter().map(|(_, at)| *at).collect();
        let mut rows = Vec::with_capacity(messages.len());
        let mut previous = Vec::new();
        for (i, (message_id, sent_at)) in messages.into_iter().enumerate() {
            let mut input = ResolveInput::reply(persona, message_id.as_str())
                .format(wire)
                .now(sent_at);
            input.model = model.map(str::to_owned);
            let out = self.resolve(&input).await?;
            let units = prefix_units(&out.body, provider);
            let mut request = out.request;
            let earlier = &times[..=i];
            request.cache.hour = hour_pays(&gaps(
                &earlier[earlier.len().saturating_sub(TTL_GAPS + 1)..],
            ));
            rows.push(CacheReportRow {
                message_id,
                sent_at,
                input_tokens: units.iter().map(|u| u.tokens).sum(),
                cached_tokens: cached_tokens(&previous, &units, provider),
                billed: sims.request(&request, &out.body, &spec, sent_at)?,
            });
            previous = units;
        }
        Ok(CacheReport {
            persona: info.name.clone(),
            thread_id,
            provider,
            model: spec.name,
            prices,
            cache_ttl: spec.cache_ttl,
            min_tokens,
            rows,
            by_ttl: sims.totals(),
        })
    }
}

/// The wire format a cache report of `persona` (whose `[model]` is `model`) encodes its
/// requests in: `format`, or for `provider` the persona's own; `messages` is no
/// provider's.
fn report_wire(
    persona: &str,
    model: Option<&protege_core::ModelConfig>,
    format: Format,
) -> Result<Format, EngineError> {
    match format {
        Format::Provider => Format::of_model(model).ok_or_else(|| {
            EngineError::new(
                EngineErrorKind::InvalidInput,
                format!(
                    "persona `{persona}` names no provider: set `provider` in its `[model]` table or ask for `openai`, `openai-responses` or `anthropic`"
                ),
            )
        }),
        Format::Messages => Err(EngineError::new(
            EngineErrorKind::BadRequest,
            "a cache report needs a provider's wire format: `openai`, `openai-responses`, `anthropic` or `provider`",
        )),
        wire => Ok(wire),
    }
}

/// The simulated prompt caches of a cache report: one per `cache_ttl`, each with what it
/// billed so far.
struct TtlSims {
    /// The provider whose cache is simulated.
    provider: Provider,
    /// The wire format the requests are encoded in.
    wire: Format,
    /// Per `cache_ttl`, its cache and the sum of what it billed.
    sims: Vec<(CacheTtl, CacheSim, Billed)>,
}

impl TtlSims {
    /// Empty caches of `provider`'s, one per `cache_ttl`, that cache no prefix under
    /// `min_tokens`.
    fn new(provider: Provider, wire: Format, min_tokens: usize) -> Self {
        let sims = CacheTtl::ALL
            .into_iter()
            .map(|ttl| (ttl, CacheSim::new(provider, min_tokens), Billed::default()))
            .collect();
        TtlSims {
            provider,
            wire,
            sims,
        }
    }

    /// Sends `request`, encoded as `body`, at `sent_at` to every cache (re-encoded with
    /// each cache's `cache_ttl` for Anthropic): what the cache of `spec`'s `cache_ttl`
    /// bills of it.
    fn request(
        &mut self,
        request: &Request,
        body: &serde_json::Value,
        spec: &ModelSpec,
        sent_at: DateTime<Utc>,
    ) -> Result<Billed, EngineError> {
        let mut billed = Billed::default();
        for (ttl, sim, total) in &mut self.sims {
            let body = match self.provider {
                Provider::Anthropic => {
                    super::encode(request, self.wire, Some(spec.clone().cache_ttl(*ttl)))?
                }
                // No lifetime to choose: the body as sent.
                Provider::Openai => body.clone(),
            };
            let b = sim.request(prefix_units(&body, self.provider), sent_at);
            total.add(&b);
            if *ttl == spec.cache_ttl {
                billed = b;
            }
        }
        Ok(billed)
    }

    /// What each `cache_ttl` billed over every request.
    fn totals(self) -> Vec<(CacheTtl, Billed)> {
        self.sims
            .into_iter()
            .map(|(ttl, _, total)| (ttl, total))
            .collect()
    }
}

/// The gaps between the latest inbound messages of thread `thread_id` sent at or before
/// `until` (the requests a reply run makes), oldest first, at most [`TTL_GAPS`] of them:
/// what `cache_ttl = "auto"` weighs. One query, on the thread's index by send time.
pub(super) async fn recent_gaps(
    conn: &DatabaseConnection,
    thread_id: i64,
    until: DateTime<Utc>,
) -> Result<Vec<chrono::Duration>, EngineError> {
    let mut times: Vec<DateTime<Utc>> = message::Entity::find()
        .select_only()
        .column(message::Column::SentAt)
        .filter(message::Column::EmailThreadId.eq(thread_id))
        .filter(message::Column::Direction.eq(Direction::Inbound.as_str()))
        .filter(message::Column::SentAt.lte(until))
        .order_by_desc(message::Column::SentAt)
        .limit(TTL_GAPS as u64 + 1)
        .into_tuple()
        .all(conn)
        .await
        .map_err(protege_core::Error::from)?;
    times.reverse();
    Ok(gaps(&times))
}

/// The gaps between consecutive `times`, oldest first.
fn gaps(times: &[DateTime<Utc>]) -> Vec<chrono::Duration> {
    times.windows(2).map(|w| w[1] - w[0]).collect()
}
