//! What the benches of this crate share.

use std::time::{Duration, Instant};

/// The median time of `runs` calls of `f` (its result kept from the optimiser).
pub(crate) fn median(runs: usize, mut f: impl FnMut() -> usize) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(f());
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}
