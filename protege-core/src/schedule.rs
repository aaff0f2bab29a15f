//! When a responsibility is due (§19): its cron expression read on the wall clock of its
//! time zone, each matching wall-clock time a *slot*, and the slots a tick fires after the
//! responsibility was first seen, after the newest slot fired, and after downtime.
//!
//! The rules, all of them pure (the clock and what was fired come in as arguments):
//!
//! - A slot is a wall-clock time of the zone that the expression matches; its instant is
//!   when that time happens. A time inside a daylight-saving gap (it never happens) fires
//!   at the first instant after the gap; a time inside a repeated hour fires once, at its
//!   first occurrence. Slots that land on one instant fire once, under the latest of their
//!   wall-clock times (`0 2,3 * * *` on a night whose 02:00–03:00 is skipped).
//! - A responsibility's first slot is the first one after the instant it was first seen;
//!   a slot at or before the newest one fired never fires.
//! - After downtime, [`CatchUp::Latest`] fires the newest missed slot only,
//!   [`CatchUp::All`] the newest `max_catch_up` of them, [`CatchUp::None`] none: only a
//!   slot whose instant passed less than [`ON_TIME`] ago fires, any older one is missed.

use std::time::Duration;

use chrono::{DateTime, LocalResult, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::errors::CronError;

use crate::agent_config::CatchUp;

/// How long after its instant a slot still counts as on time with `catch_up = "none"`:
/// one minute, many times the few seconds between two ticks of `protege serve --agent`,
/// and enough for a `protege agent tick` that cron starts each minute.
pub const ON_TIME: Duration = Duration::from_secs(60);

/// How far past the wall-clock time of `now` the newest slots are looked for: a clock that
/// went back repeats up to this much of wall-clock time (an hour in every zone that
/// observes daylight saving time today, two in the widest ever), and a slot in the
/// repeated range already happened at its first occurrence.
const REPEAT_MARGIN: chrono::Duration = chrono::Duration::hours(3);

/// How far past a wall-clock time inside a gap its first valid time is looked for (the
/// widest gap ever is a day, Samoa's at the end of 2011).
const GAP_LIMIT_MINUTES: i64 = 2 * 24 * 60;

/// The most slots examined by one [`Schedule::due`]: the newest ones up to the wanted
/// count, those of the repeat margin and a few collapsed ones, in any real schedule; a
/// bound against a pathological one.
const MAX_STEPS: usize = 10_000;

/// The wall-clock form of a slot in messages and in the database: `2026-03-29T02:30`.
pub const LOCAL_TIME_FORMAT: &str = "%Y-%m-%dT%H:%M";

/// A cron expression on the wall clock of a time zone.
#[derive(Debug, Clone)]
pub struct Schedule {
    cron: Cron,
    zone: Tz,
}

/// One due time of a responsibility.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Slot {
    /// The wall-clock time the expression matched, in the responsibility's zone (naive: it
    /// may be a time the zone skipped).
    pub local: NaiveDateTime,
    /// When it fires.
    pub at: DateTime<Utc>,
}

impl Slot {
    /// The wall-clock time as [`LOCAL_TIME_FORMAT`] writes it.
    pub fn local_text(&self) -> String {
        self.local.format(LOCAL_TIME_FORMAT).to_string()
    }
}

/// What [`Schedule::due`] needs besides the schedule: what was fired, the clock and the
/// responsibility's `catch_up`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    /// When the agent first saw the responsibility: only later slots fire.
    pub first_seen: DateTime<Utc>,
    /// The newest slot fired, if any: only later slots fire.
    pub last_fired: Option<Slot>,
    /// The clock.
    pub now: DateTime<Utc>,
    /// What happens to the slots missed during downtime.
    pub catch_up: CatchUp,
    /// `[agent] max_catch_up`: the most slots [`CatchUp::All`] fires at once.
    pub max_catch_up: u32,
}

impl Schedule {
    /// `expression` (see [`parse_cron`]) on the wall clock of `zone`.
    pub fn new(expression: &str, zone: Tz) -> Result<Schedule, CronError> {
        Ok(Schedule {
            cron: parse_cron(expression)?,
            zone,
        })
    }

    /// The time zone.
    pub fn zone(&self) -> Tz {
        self.zone
    }

    /// When the wall-clock time `local` happens: its only instant, the first of two in a
    /// repeated hour, the first instant after the gap for a time the zone skips; `None`
    /// only past the end of the zone's data.
    pub fn instant(&self, local: NaiveDateTime) -> Option<DateTime<Utc>> {
        if let Some(at) = self.zone.from_local_datetime(&local).earliest() {
            return Some(at.with_timezone(&Utc));
        }
        (1..=GAP_LIMIT_MINUTES).find_map(|minutes| {
            let later = local.checked_add_signed(chrono::Duration::minutes(minutes))?;
            match self.zone.from_local_datetime(&later) {
                LocalResult::None => None,
                valid => valid.earliest().map(|at| at.with_timezone(&Utc)),
            }
        })
    }

    /// The slots due at `due.now`, oldest first (see the module's rules).
    pub fn due(&self, due: &Due) -> Vec<Slot> {
        let wanted = match due.catch_up {
            CatchUp::All => usize::try_from(due.max_catch_up.max(1)).unwrap_or(usize::MAX),
            CatchUp::Latest | CatchUp::None => 1,
        };
        let mut newest_first: Vec<Slot> = Vec::new();
        let Some(mut cursor) = due
            .now
            .with_timezone(&self.zone)
            .naive_local()
            .checked_add_signed(REPEAT_MARGIN)
        else {
            return Vec::new();
        };
        for _ in 0..MAX_STEPS {
            let Ok(local) = self.cron.find_previous_occurrence(&cursor, false) else {
                break;
            };
            cursor = local;
            if due.last_fired.is_some_and(|last| local <= last.local) {
                break;
            }
            let Some(at) = self.instant(local) else {
                continue;
            };
            if at > due.now {
                continue;
            }
            if at <= due.first_seen || due.last_fired.is_some_and(|last| at <= last.at) {
                break;
            }
            // A later wall-clock time on the same instant was kept already.
            if newest_first.last().is_some_and(|kept| kept.at == at) {
                continue;
            }
            newest_first.push(Slot { local, at });
            if newest_first.len() >= wanted {
                break;
            }
        }
        if due.catch_up == CatchUp::None {
            let on_time = chrono::Duration::from_std(ON_TIME).unwrap_or(chrono::Duration::MAX);
            newest_first.retain(|slot| due.now - slot.at < on_time);
        }
        newest_first.reverse();
        newest_first
    }
}

/// Parses a standard cron expression of 5 fields (minute, hour, day of month, month, day
/// of week), as persona files write them: no seconds, no year.
pub fn parse_cron(expression: &str) -> Result<Cron, CronError> {
    croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Disallowed)
        .year(croner::parser::Year::Disallowed)
        .build()
        .parse(expression)
}

#[cfg(test)]
mod tests {
    // The rules of `Schedule`, case by case: daylight-saving gaps and repeats in
    // Europe/Paris and America/New_York, the first slot after the responsibility was first
    // seen, and each `catch_up` after an outage.

    use chrono::{DateTime, Utc};
    use chrono_tz::Tz;

    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn schedule(expression: &str, zone: Tz) -> Schedule {
        Schedule::new(expression, zone).unwrap_or_else(|e| panic!("{expression}: {e}"))
    }

    /// A slot as `(wall-clock time, UTC instant)`.
    fn shown(slot: &Slot) -> (String, String) {
        (
            slot.local_text(),
            slot.at.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        )
    }

    fn shown_all(slots: &[Slot]) -> Vec<(String, String)> {
        slots.iter().map(shown).collect()
    }

    fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
        expected
            .iter()
            .map(|(l, u)| ((*l).to_owned(), (*u).to_owned()))
            .collect()
    }

    /// What a serve process ticking every minute from `from` (when it first saw the
    /// responsibility) to `to` fires, each slot with the tick that fired it; every slot must
    /// fire on its own minute, once.
    fn ticked(expression: &str, zone: Tz, from: &str, to: &str) -> Vec<(String, String)> {
        let schedule = schedule(expression, zone);
        let (from, to) = (at(from), at(to));
        let mut last_fired = None;
        let mut fired = Vec::new();
        let mut now = from;
        while now <= to {
            let due = schedule.due(&Due {
                first_seen: from,
                last_fired,
                now,
                catch_up: CatchUp::All,
                max_catch_up: 24,
            });
            for slot in due {
                assert!(
                    now - slot.at < chrono::Duration::minutes(1),
                    "{} fired late, at {now}",
                    slot.local_text()
                );
                fired.push(shown(&slot));
                last_fired = Some(slot);
            }
            now += chrono::Duration::minutes(1);
        }
        fired
    }

    // --- daylight saving time ------------------------------------------------------------------

    #[test]
    fn paris_a_time_in_the_spring_gap_fires_at_the_first_instant_after_it() {
        // 2024-03-31: 02:00 CET becomes 03:00 CEST (01:00 UTC); 02:30 does not happen.
        assert_eq!(
            ticked(
                "30 2 * * *",
                Tz::Europe__Paris,
                "2024-03-30T12:00:00Z",
                "2024-04-01T12:00:00Z"
            ),
            pairs(&[
                ("2024-03-31T02:30", "2024-03-31T01:00:00Z"),
                ("2024-04-01T02:30", "2024-04-01T00:30:00Z"),
            ])
        );
    }

    #[test]
    fn paris_a_time_in_the_repeated_hour_fires_once_at_its_first_occurrence() {
        // 2024-10-27: 03:00 CEST becomes 02:00 CET (01:00 UTC); 02:30 happens twice.
        assert_eq!(
            ticked(
                "30 2 * * *",
                Tz::Europe__Paris,
                "2024-10-26T12:00:00Z",
                "2024-10-28T12:00:00Z"
            ),
            pairs(&[
                ("2024-10-27T02:30", "2024-10-27T00:30:00Z"),
                ("2024-10-28T02:30", "2024-10-28T01:30:00Z"),
            ])
        );
    }

    #[test]
    fn new_york_a_time_in_the_spring_gap_fires_at_the_first_instant_after_it() {
        // 2024-03-10: 02:00 EST becomes 03:00 EDT (07:00 UTC).
        assert_eq!(
            ticked(
                "30 2 * * *",
                Tz::America__New_York,
                "2024-03-09T12:00:00Z",
                "2024-03-11T12:00:00Z"
            ),
            pairs(&[
                ("2024-03-10T02:30", "2024-03-10T07:00:00Z"),
                ("2024-03-11T02:30", "2024-03-11T06:30:00Z"),
            ])
        );
    }

    #[test]
    fn new_york_fall_back_repeats_one_o_clock_not_two() {
        // 2024-11-03: 02:00 EDT becomes 01:00 EST (06:00 UTC): 02:30 happens once, 01:30 twice.
        assert_eq!(
            ticked(
                "30 2 * * *",
                Tz::America__New_York,
                "2024-11-02T12:00:00Z",
                "2024-11-04T12:00:00Z"
            ),
            pairs(&[
                ("2024-11-03T02:30", "2024-11-03T07:30:00Z"),
                ("2024-11-04T02:30", "2024-11-04T07:30:00Z"),
            ])
        );
        assert_eq!(
            ticked(
                "30 1 * * *",
                Tz::America__New_York,
                "2024-11-02T12:00:00Z",
                "2024-11-04T12:00:00Z"
            ),
            pairs(&[
                ("2024-11-03T01:30", "2024-11-03T05:30:00Z"),
                ("2024-11-04T01:30", "2024-11-04T06:30:00Z"),
            ])
        );
    }

    #[test]
    fn hourly_in_paris_across_both_transitions() {
        // Spring: 02:00 does not happen; it would fire at 03:00 CEST with the 03:00 slot, which
        // fires once for both.
        assert_eq!(
            ticked(
                "0 * * * *",
                Tz::Europe__Paris,
                "2024-03-30T22:30:00Z",
                "2024-03-31T03:30:00Z"
            ),
            pairs(&[
                ("2024-03-31T00:00", "2024-03-30T23:00:00Z"),
                ("2024-03-31T01:00", "2024-03-31T00:00:00Z"),
                ("2024-03-31T03:00", "2024-03-31T01:00:00Z"),
                ("2024-03-31T04:00", "2024-03-31T02:00:00Z"),
                ("2024-03-31T05:00", "2024-03-31T03:00:00Z"),
            ])
        );
        // Autumn: 02:00 happens twice and fires at its first occurrence only.
        assert_eq!(
            ticked(
                "0 * * * *",
                Tz::Europe__Paris,
                "2024-10-26T22:30:00Z",
                "2024-10-27T03:30:00Z"
            ),
            pairs(&[
                ("2024-10-27T01:00", "2024-10-26T23:00:00Z"),
                ("2024-10-27T02:00", "2024-10-27T00:00:00Z"),
                ("2024-10-27T03:00", "2024-10-27T02:00:00Z"),
                ("2024-10-27T04:00", "2024-10-27T03:00:00Z"),
            ])
        );
    }

    #[test]
    fn hourly_in_new_york_across_both_transitions() {
        assert_eq!(
            ticked(
                "0 * * * *",
                Tz::America__New_York,
                "2024-03-10T05:30:00Z",
                "2024-03-10T09:30:00Z"
            ),
            pairs(&[
                ("2024-03-10T01:00", "2024-03-10T06:00:00Z"),
                ("2024-03-10T03:00", "2024-03-10T07:00:00Z"),
                ("2024-03-10T04:00", "2024-03-10T08:00:00Z"),
                ("2024-03-10T05:00", "2024-03-10T09:00:00Z"),
            ])
        );
        assert_eq!(
            ticked(
                "0 * * * *",
                Tz::America__New_York,
                "2024-11-03T03:30:00Z",
                "2024-11-03T08:30:00Z"
            ),
            pairs(&[
                ("2024-11-03T00:00", "2024-11-03T04:00:00Z"),
                ("2024-11-03T01:00", "2024-11-03T05:00:00Z"),
                ("2024-11-03T02:00", "2024-11-03T07:00:00Z"),
                ("2024-11-03T03:00", "2024-11-03T08:00:00Z"),
            ])
        );
    }

    #[test]
    fn every_quarter_hour_in_the_gap_fires_once_after_it() {
        // 02:00, 02:15, 02:30 and 02:45 all land on 03:00 CEST, with 03:00 itself.
        assert_eq!(
            ticked(
                "*/15 * * * *",
                Tz::Europe__Paris,
                "2024-03-31T00:40:00Z",
                "2024-03-31T01:20:00Z"
            ),
            pairs(&[
                ("2024-03-31T01:45", "2024-03-31T00:45:00Z"),
                ("2024-03-31T03:00", "2024-03-31T01:00:00Z"),
                ("2024-03-31T03:15", "2024-03-31T01:15:00Z"),
            ])
        );
    }

    #[test]
    fn the_instant_of_a_wall_clock_time() {
        let paris = schedule("0 * * * *", Tz::Europe__Paris);
        let local = |text: &str| {
            NaiveDateTime::parse_from_str(text, LOCAL_TIME_FORMAT).unwrap_or_else(|e| panic!("{e}"))
        };
        assert_eq!(
            paris.instant(local("2024-03-31T02:30")),
            Some(at("2024-03-31T01:00:00Z"))
        );
        assert_eq!(
            paris.instant(local("2024-10-27T02:30")),
            Some(at("2024-10-27T00:30:00Z"))
        );
        assert_eq!(
            paris.instant(local("2024-07-01T08:00")),
            Some(at("2024-07-01T06:00:00Z"))
        );
        // Samoa skipped 30 December 2011 entirely.
        let apia = schedule("0 9 * * *", Tz::Pacific__Apia);
        assert_eq!(
            apia.instant(local("2011-12-30T09:00")),
            Some(at("2011-12-30T10:00:00Z"))
        );
    }

    // --- first seen and catch-up ---------------------------------------------------------------

    /// The slots of `0 8 * * *` in Paris (06:00 UTC in June) due at `now`, the agent having
    /// first seen it on 1 June and last fired 1 June's slot: a three-day outage.
    fn after_outage(now: &str, catch_up: CatchUp, max_catch_up: u32) -> Vec<(String, String)> {
        let daily = schedule("0 8 * * *", Tz::Europe__Paris);
        let last = Slot {
            local: NaiveDateTime::parse_from_str("2026-06-01T08:00", LOCAL_TIME_FORMAT)
                .unwrap_or_else(|e| panic!("{e}")),
            at: at("2026-06-01T06:00:00Z"),
        };
        shown_all(&daily.due(&Due {
            first_seen: at("2026-05-31T12:00:00Z"),
            last_fired: Some(last),
            now: at(now),
            catch_up,
            max_catch_up,
        }))
    }

    #[test]
    fn latest_fires_only_the_newest_missed_slot() {
        let latest = pairs(&[("2026-06-04T08:00", "2026-06-04T06:00:00Z")]);
        assert_eq!(
            after_outage("2026-06-04T06:00:30Z", CatchUp::Latest, 24),
            latest
        );
        // Hours late, the newest slot still fires.
        assert_eq!(
            after_outage("2026-06-04T17:00:00Z", CatchUp::Latest, 24),
            latest
        );
    }

    #[test]
    fn all_fires_every_missed_slot_up_to_max_catch_up() {
        assert_eq!(
            after_outage("2026-06-04T17:00:00Z", CatchUp::All, 24),
            pairs(&[
                ("2026-06-02T08:00", "2026-06-02T06:00:00Z"),
                ("2026-06-03T08:00", "2026-06-03T06:00:00Z"),
                ("2026-06-04T08:00", "2026-06-04T06:00:00Z"),
            ])
        );
        assert_eq!(
            after_outage("2026-06-04T17:00:00Z", CatchUp::All, 2),
            pairs(&[
                ("2026-06-03T08:00", "2026-06-03T06:00:00Z"),
                ("2026-06-04T08:00", "2026-06-04T06:00:00Z"),
            ])
        );
        // Hourly over three days: the newest 24 of the 72 missed.
        let hourly = schedule("0 * * * *", Tz::UTC);
        let due = hourly.due(&Due {
            first_seen: at("2026-06-01T00:30:00Z"),
            last_fired: None,
            now: at("2026-06-04T00:30:00Z"),
            catch_up: CatchUp::All,
            max_catch_up: 24,
        });
        assert_eq!(
            (due.len(), due.first().map(shown), due.last().map(shown)),
            (
                24,
                Some((
                    "2026-06-03T01:00".to_owned(),
                    "2026-06-03T01:00:00Z".to_owned()
                )),
                Some((
                    "2026-06-04T00:00".to_owned(),
                    "2026-06-04T00:00:00Z".to_owned()
                )),
            )
        );
    }

    #[test]
    fn none_fires_only_a_slot_that_is_on_time() {
        assert_eq!(
            after_outage("2026-06-04T06:00:30Z", CatchUp::None, 24),
            pairs(&[("2026-06-04T08:00", "2026-06-04T06:00:00Z")])
        );
        // A minute after its instant, the slot is missed.
        assert_eq!(
            after_outage("2026-06-04T06:01:00Z", CatchUp::None, 24),
            Vec::<(String, String)>::new()
        );
        assert_eq!(
            after_outage("2026-06-04T17:00:00Z", CatchUp::None, 24),
            Vec::<(String, String)>::new()
        );
    }

    #[test]
    fn no_slot_fires_before_the_responsibility_was_first_seen() {
        let daily = schedule("0 8 * * *", Tz::Europe__Paris);
        let due = |first_seen: &str, now: &str, catch_up| {
            shown_all(&daily.due(&Due {
                first_seen: at(first_seen),
                last_fired: None,
                now: at(now),
                catch_up,
                max_catch_up: 24,
            }))
        };
        let none = Vec::<(String, String)>::new();
        // Seen at the slot's own instant: the slot is not after it.
        assert_eq!(
            due("2026-06-04T06:00:00Z", "2026-06-04T06:00:30Z", CatchUp::All),
            none
        );
        assert_eq!(
            due("2026-06-04T05:59:59Z", "2026-06-04T06:00:30Z", CatchUp::All),
            pairs(&[("2026-06-04T08:00", "2026-06-04T06:00:00Z")])
        );
        // Seen in the evening: nothing until the next morning, whatever `catch_up` says.
        for catch_up in [CatchUp::Latest, CatchUp::All, CatchUp::None] {
            assert_eq!(
                due("2026-06-04T18:00:00Z", "2026-06-05T05:59:00Z", catch_up),
                none
            );
        }
        assert_eq!(
            due(
                "2026-06-04T18:00:00Z",
                "2026-06-05T06:00:00Z",
                CatchUp::Latest
            ),
            pairs(&[("2026-06-05T08:00", "2026-06-05T06:00:00Z")])
        );
    }

    #[test]
    fn a_fired_slot_never_fires_again() {
        let daily = schedule("0 8 * * *", Tz::Europe__Paris);
        let fired = Slot {
            local: NaiveDateTime::parse_from_str("2026-06-04T08:00", LOCAL_TIME_FORMAT)
                .unwrap_or_else(|e| panic!("{e}")),
            at: at("2026-06-04T06:00:00Z"),
        };
        for catch_up in [CatchUp::Latest, CatchUp::All, CatchUp::None] {
            let due = daily.due(&Due {
                first_seen: at("2026-06-01T00:00:00Z"),
                last_fired: Some(fired),
                now: at("2026-06-04T06:00:10Z"),
                catch_up,
                max_catch_up: 24,
            });
            assert_eq!(due, Vec::new(), "{catch_up:?}");
        }
    }

    #[test]
    fn a_schedule_that_never_matches_is_never_due() {
        let never = schedule("0 0 30 2 *", Tz::UTC);
        let due = never.due(&Due {
            first_seen: at("2026-01-01T00:00:00Z"),
            last_fired: None,
            now: at("2026-06-01T00:00:00Z"),
            catch_up: CatchUp::All,
            max_catch_up: 24,
        });
        assert_eq!(due, Vec::new());
    }
}
