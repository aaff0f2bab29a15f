//! Token counts calibrated from recorded usage (§13): [`Engine::calibration`].
//!
//! Each engine keeps, per model, the sums of its fit and how many runs they hold. A call
//! asks the database how many runs of the model have a round 0 with usage (one query);
//! when that number grew, it reads only the rounds written since, and adds them to the
//! sums (a number that does not add up, after a run was deleted by hand or rounds were
//! written out of order, reads them all again).

use std::collections::HashMap;

use protege_core::{Calibration, CalibrationFit};

use super::{Engine, EngineError};
use crate::db;

/// The fit of one model as an engine keeps it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CachedFit {
    /// How many samples the sums hold.
    samples: u64,
    /// The highest round row id among them.
    max_id: Option<i64>,
    /// The sums.
    fit: CalibrationFit,
}

/// The fits of an engine, by model.
pub(crate) type Fits = std::sync::Mutex<HashMap<String, CachedFit>>;

impl Engine {
    /// The token calibration of `model` from the runs recorded in the database: a fit of
    /// the input tokens billed for each run's round 0 (uncached + cache read + cache write)
    /// against the characters and the messages of its request (see [`Calibration`]).
    /// `None` while fewer than [`protege_core::CALIBRATION_MIN_RUNS`] runs of the model
    /// have a round 0 with usage, or when they give no positive tokens per character.
    ///
    /// The fit is made once per engine and model, and extended with the new runs when
    /// their number grows: a call costs one query when nothing was recorded since.
    pub async fn calibration(&self, model: &str) -> Result<Option<Calibration>, EngineError> {
        let conn = self.db().await?;
        let (count, max_id) = db::usage_sample_stats(conn, model).await?;
        let cached = self
            .inner
            .fits
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(model)
            .copied()
            .unwrap_or_default();
        if cached.samples == count && cached.max_id == max_id {
            return Ok(cached.fit.calibration());
        }
        let mut next = cached;
        let mut read = db::usage_samples(conn, model, cached.max_id).await?;
        if cached.samples + read.len() as u64 != count {
            next = CachedFit::default();
            read = db::usage_samples(conn, model, None).await?;
        }
        for sample in &read {
            let billed = [
                sample.input_tokens,
                sample.cache_read_tokens,
                sample.cache_write_tokens,
            ]
            .iter()
            .map(|&n| u64::try_from(n).unwrap_or_default())
            .sum();
            next.samples += 1;
            next.max_id = next.max_id.max(Some(sample.round_id));
            if let Some(request) = super::run::stored_request(&sample.request) {
                next.fit.add_request(&request, billed);
            }
        }
        self.inner
            .fits
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(model.to_owned(), next);
        Ok(next.fit.calibration())
    }
}
