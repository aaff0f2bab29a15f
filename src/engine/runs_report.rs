//! The cache report from recorded runs (§13, "usage becomes measurement"): per run, the
//! share of its input the provider reported read from its cache, next to the share the
//! prefix simulation of [`Engine::cache_report`] predicts for the same bodies.

use std::collections::HashMap;

use chrono::{DateTime, SecondsFormat, Utc};
use protege_core::db::entities::{run as run_row, run_round};
use protege_core::wire::Usage;
use protege_core::wire::{PrefixUnit, cached_tokens, prefix_units};
use protege_core::{Prices, Provider};
use sea_orm::DatabaseConnection;

use super::cache_report::{dollars, percent};
use super::run::{round_bodies, stored_cache_key, written_for_an_hour};
use super::{Engine, EngineError};
use crate::db;

/// One recorded run of a [`RunCacheReport`].
///
/// Everything is over the rounds the run recorded: a run that did not finish (`started`)
/// shows the rounds recorded so far (none: 0 billed, `-` for both shares), and the body
/// it was handed last, with no response recorded, is neither billed nor simulated.
#[derive(Debug, Clone, PartialEq)]
pub struct RunCacheRow {
    /// The run's id.
    pub run_id: String,
    /// `started`, `done` or `stopped`.
    pub status: String,
    /// The rounds recorded.
    pub rounds: u32,
    /// The input tokens billed over its rounds: uncached + read from the cache + written
    /// to it, as the provider reported them.
    pub billed_tokens: u64,
    /// The input tokens the provider reported read from its cache.
    pub cache_read_tokens: u64,
    /// The tokens of the run's round bodies, estimated as characters / 4 of each block's
    /// JSON, rounded up.
    pub simulated_input_tokens: usize,
    /// Of those, what the simulation says a prompt cache would serve: for round 0 the
    /// longest prefix it shares with a body of the previous run of the same conversation
    /// (same cache key, format and model), for round k ≥ 1 the prefix it shares with round
    /// k − 1's body, up to a breakpoint for Anthropic bodies.
    pub simulated_cached_tokens: usize,
    /// What its recorded rounds cost in USD at the run model's prices (the shipped table's
    /// under the persona's `[model] prices`): input, output, cache reads and writes, the
    /// writes for an hour at their own price; `None` when no price is known for the model.
    pub cost: Option<f64>,
    /// What the same tokens would have cost without a cache: every input token at the
    /// input price, the output as reported.
    pub uncached_cost: Option<f64>,
}

impl RunCacheRow {
    /// The share of the billed input the provider read from its cache (`None` when
    /// nothing was billed).
    pub fn reported_fraction(&self) -> Option<f64> {
        (self.billed_tokens > 0).then(|| self.cache_read_tokens as f64 / self.billed_tokens as f64)
    }

    /// The share of the bodies' tokens the simulation serves from cache (`None` when the
    /// run has no recorded round).
    pub fn simulated_fraction(&self) -> Option<f64> {
        (self.simulated_input_tokens > 0)
            .then(|| self.simulated_cached_tokens as f64 / self.simulated_input_tokens as f64)
    }
}

/// The recorded runs of a persona, oldest first, with the cache share the provider
/// reported next to the simulated one. Made by [`Engine::cache_report_from_runs`];
/// `Display` prints the table of `protege cache-report --from-runs`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunCacheReport {
    /// The persona.
    pub persona: String,
    /// The runs started at or after this time (all of them with `None`).
    pub since: Option<DateTime<Utc>>,
    /// One row per run, oldest first.
    pub rows: Vec<RunCacheRow>,
}

impl RunCacheReport {
    /// The rounds of every run.
    pub fn rounds(&self) -> u64 {
        self.rows.iter().map(|r| u64::from(r.rounds)).sum()
    }

    /// The input tokens billed over every run.
    pub fn billed_tokens(&self) -> u64 {
        self.rows.iter().map(|r| r.billed_tokens).sum()
    }

    /// The input tokens read from the cache over every run.
    pub fn cache_read_tokens(&self) -> u64 {
        self.rows.iter().map(|r| r.cache_read_tokens).sum()
    }

    /// The simulated tokens of every run's bodies.
    pub fn simulated_input_tokens(&self) -> usize {
        self.rows.iter().map(|r| r.simulated_input_tokens).sum()
    }

    /// The simulated cached tokens over every run.
    pub fn simulated_cached_tokens(&self) -> usize {
        self.rows.iter().map(|r| r.simulated_cached_tokens).sum()
    }

    /// The cost in USD of every run with a price (see [`RunCacheRow::cost`]).
    pub fn cost(&self) -> f64 {
        self.rows.iter().filter_map(|r| r.cost).sum()
    }

    /// The cost in USD of the same runs without a cache.
    pub fn uncached_cost(&self) -> f64 {
        self.rows.iter().filter_map(|r| r.uncached_cost).sum()
    }
}

fn share(part: u64, whole: u64) -> String {
    percent(
        usize::try_from(part).unwrap_or(usize::MAX),
        usize::try_from(whole).unwrap_or(usize::MAX),
    )
}

impl std::fmt::Display for RunCacheReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let since = self
            .since
            .map(|t| format!(", since {}", t.to_rfc3339_opts(SecondsFormat::AutoSi, true)))
            .unwrap_or_default();
        writeln!(
            f,
            "cache report from runs: persona `{}`{since}, {} {}",
            self.persona,
            self.rows.len(),
            if self.rows.len() == 1 { "run" } else { "runs" }
        )?;
        let width = self
            .rows
            .iter()
            .map(|r| r.run_id.chars().count())
            .max()
            .unwrap_or(0)
            .max("run".len());
        let line = |f: &mut std::fmt::Formatter<'_>, cells: [&str; 9]| {
            let [
                n,
                run,
                status,
                rounds,
                billed,
                cached,
                reported,
                simulated,
                cost,
            ] = cells;
            let text = format!(
                "  {n:>3}  {run:<width$}  {status:<7}  {rounds:>6}  {billed:>8}  {cached:>8}  {reported:>8}  {simulated:>9}  {cost:>9}"
            );
            writeln!(f, "{}", text.trim_end())
        };
        line(
            f,
            [
                "#",
                "run",
                "status",
                "rounds",
                "billed",
                "cached",
                "reported",
                "simulated",
                "cost",
            ],
        )?;
        for (i, r) in self.rows.iter().enumerate() {
            line(
                f,
                [
                    &(i + 1).to_string(),
                    &r.run_id,
                    &r.status,
                    &r.rounds.to_string(),
                    &r.billed_tokens.to_string(),
                    &r.cache_read_tokens.to_string(),
                    &share(r.cache_read_tokens, r.billed_tokens),
                    &percent(r.simulated_cached_tokens, r.simulated_input_tokens),
                    &r.cost.map_or_else(|| "-".to_owned(), dollars),
                ],
            )?;
        }
        line(
            f,
            [
                "",
                "total",
                "",
                &self.rounds().to_string(),
                &self.billed_tokens().to_string(),
                &self.cache_read_tokens().to_string(),
                &share(self.cache_read_tokens(), self.billed_tokens()),
                &percent(
                    self.simulated_cached_tokens(),
                    self.simulated_input_tokens(),
                ),
                &dollars(self.cost()),
            ],
        )?;
        write!(
            f,
            "billed = input + cache read + cache write tokens as the provider reported them for the recorded rounds; \
             reported = cached (read) / billed\n\
             simulated = the share of the same bodies (tokens estimated as characters / 4 of each block's JSON) a prompt cache would serve: \
             round 0 after the previous run of its conversation, round k after round k - 1, \
             up to the longest shared prefix (that ends at a breakpoint, for anthropic bodies)\n\
             cost = USD at the run's model's prices per million tokens (the persona's `[model] prices` over the shipped ones; - without a price); \
             without caching {}, saved {}",
            dollars(self.uncached_cost()),
            dollars(self.uncached_cost() - self.cost())
        )
    }
}

/// A conversation whose bodies share a provider's cache: cache key, format and model.
type Conversation = (String, protege_core::db::RunFormat, String);

/// The previous run of a conversation: its row until its bodies are needed, then their
/// units.
enum Previous {
    Row(Box<run_row::Model>),
    Units(Vec<Vec<PrefixUnit>>),
}

impl Previous {
    /// The units of the previous run's bodies, read from its rounds the first time.
    async fn units(
        &mut self,
        conn: &DatabaseConnection,
    ) -> Result<&[Vec<PrefixUnit>], EngineError> {
        if let Previous::Row(row) = self {
            let rounds = db::load_rounds(conn, &row.id).await?;
            *self = Previous::Units(round_units(conn, row, &rounds).await?);
        }
        Ok(match self {
            Previous::Units(units) => units,
            Previous::Row(_) => &[],
        })
    }
}

/// The prefix units of each body of `run` that its recorded `rounds` answered.
async fn round_units(
    conn: &DatabaseConnection,
    run: &run_row::Model,
    rounds: &[run_round::Model],
) -> Result<Vec<Vec<PrefixUnit>>, EngineError> {
    let provider = provider_of(run);
    Ok(round_bodies(conn, run, rounds)
        .await?
        .iter()
        .map(|body| prefix_units(body, provider))
        .collect())
}

/// The tokens a prompt cache would serve of a run's bodies, `units`: body 0 up to the
/// longest prefix it shares with one of the previous run's bodies, `before`, body k up to
/// the prefix it shares with body k − 1.
fn simulated_cached(
    before: &[Vec<PrefixUnit>],
    units: &[Vec<PrefixUnit>],
    provider: Provider,
) -> usize {
    let mut cached = 0;
    for (k, current) in units.iter().enumerate() {
        cached += if k == 0 {
            before
                .iter()
                .map(|p| cached_tokens(p, current, provider))
                .max()
                .unwrap_or(0)
        } else {
            cached_tokens(&units[k - 1], current, provider)
        };
    }
    cached
}

/// The row of `run`, with its recorded `rounds`, the `units` of their bodies, the tokens
/// the simulation serves of them from cache, and the `prices` of its model.
fn cache_row(
    run: &run_row::Model,
    rounds: &[run_round::Model],
    units: &[Vec<PrefixUnit>],
    simulated_cached: usize,
    prices: Option<Prices>,
) -> RunCacheRow {
    let count = |n: i64| u64::try_from(n).unwrap_or_default();
    let usage = Usage {
        input: count(run.input_tokens),
        output: count(run.output_tokens),
        cache_read: count(run.cache_read_tokens),
        cache_write: count(run.cache_write_tokens),
        // The split of the writes is in the stored responses (Anthropic's).
        cache_write_1h: rounds
            .iter()
            .filter(|r| r.response.contains("ephemeral_1h_input_tokens"))
            .filter_map(|r| serde_json::from_str(&r.response).ok())
            .map(|response| written_for_an_hour(&response))
            .fold(0, u64::saturating_add),
    };
    let uncached = Usage {
        input: usage
            .input
            .saturating_add(usage.cache_read)
            .saturating_add(usage.cache_write),
        output: usage.output,
        ..Usage::default()
    };
    RunCacheRow {
        run_id: run.id.clone(),
        status: run.status.to_string(),
        rounds: u32::try_from(run.rounds).unwrap_or_default(),
        billed_tokens: count(run.input_tokens)
            + count(run.cache_read_tokens)
            + count(run.cache_write_tokens),
        cache_read_tokens: count(run.cache_read_tokens),
        simulated_input_tokens: units.iter().flatten().map(|u| u.tokens).sum(),
        simulated_cached_tokens: simulated_cached,
        cost: prices.map(|p| p.usage_cost(&usage)),
        uncached_cost: prices.map(|p| p.usage_cost(&uncached)),
    }
}

/// The provider whose cache serves the bodies of `run`: Anthropic's for its format, else
/// OpenAI's.
fn provider_of(run: &run_row::Model) -> Provider {
    run.format.provider()
}

impl Engine {
    /// The recorded runs of `persona` started at or after `since` (all of them with
    /// `None`), oldest first: per run its rounds, the input tokens billed and the share
    /// the provider reported read from its cache, next to the share the prefix simulation
    /// of [`Engine::cache_report`] predicts for the run's bodies (rebuilt from the stored
    /// request and rounds as [`Engine::record_round`] builds them): round 0 against the
    /// bodies of the previous run of the same conversation (same cache key, format and
    /// model; a run before `since` counts), round k ≥ 1 against round k − 1.
    ///
    /// A persona with no recorded run that is not a valid persona either is
    /// [`EngineErrorKind::NotFound`](super::EngineErrorKind::NotFound).
    pub async fn cache_report_from_runs(
        &self,
        persona: &str,
        since: Option<DateTime<Utc>>,
    ) -> Result<RunCacheReport, EngineError> {
        let conn = self.db().await?;
        let runs = db::persona_runs(conn, persona, None).await?;
        if runs.is_empty() && self.persona(persona).is_none() {
            self.require_persona(persona)?;
        }
        let overrides = self
            .persona(persona)
            .and_then(|p| p.info().model.as_ref().and_then(|m| m.prices));
        let mut prices_of: HashMap<String, Option<Prices>> = HashMap::new();
        let mut previous: HashMap<Conversation, Previous> = HashMap::new();
        let mut rows = Vec::new();
        for run in runs {
            let conversation =
                stored_cache_key(&run.request).map(|key| (key, run.format, run.model.clone()));
            if since.is_some_and(|since| run.started_at < since) {
                if let Some(c) = conversation.filter(|_| run.rounds > 0) {
                    previous.insert(c, Previous::Row(Box::new(run)));
                }
                continue;
            }
            let rounds = db::load_rounds(conn, &run.id).await?;
            let units = round_units(conn, &run, &rounds).await?;
            let before: &[Vec<PrefixUnit>] =
                match conversation.as_ref().and_then(|c| previous.get_mut(c)) {
                    Some(slot) => slot.units(conn).await?,
                    None => &[],
                };
            let simulated_cached = simulated_cached(before, &units, provider_of(&run));
            let prices = *prices_of
                .entry(run.model.clone())
                .or_insert_with(|| Prices::resolve(&run.model, overrides.as_ref()));
            rows.push(cache_row(&run, &rounds, &units, simulated_cached, prices));
            if let Some(c) = conversation.filter(|_| !units.is_empty()) {
                previous.insert(c, Previous::Units(units));
            }
        }
        Ok(RunCacheReport {
            persona: persona.to_owned(),
            since,
            rows,
        })
    }
}
