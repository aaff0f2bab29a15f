//! The `[[responsibilities]]` of a persona, read for [`persona`](crate::persona): each
//! task's name, its schedule on the wall clock of its time zone, what a missed slot does,
//! and where its answer goes.

use protege_core::{CatchUp, Responsibility, Tz};
use protege_schema::{CATCH_UP, RESPONSIBILITY, SUBJECT_MAX_CHARS, key_names};

use crate::agent::{one_line, one_of};
use crate::diagnostic::{did_you_mean, lowercase_first};
use crate::persona::addresses;
use crate::reader::{self, Sink, Value, entries, get, required, unknown_keys};
use crate::tools::ToolNames;

/// The entries of `[[responsibilities]]`; an entry with a problem is reported and left
/// out. `tools` checks the names of each entry's `tools`.
pub(crate) fn read(
    sink: &mut Sink<'_>,
    value: &Value<'_>,
    tools: &ToolNames,
) -> Vec<Responsibility> {
    let mut out: Vec<Responsibility> = Vec::new();
    // Every name seen, also of entries with other problems, so that a duplicate is
    // reported whatever else is wrong with either entry.
    let mut seen: Vec<String> = Vec::new();
    for (entry, t) in entries(sink, value, "responsibilities") {
        unknown_keys(
            sink,
            t,
            &key_names(RESPONSIBILITY),
            " in `[[responsibilities]]`",
        );
        let name = required(sink, entry, t, "name", "a responsibility").and_then(|v| {
            let n = reader::string(sink, v, "`name`")?;
            if n.trim().is_empty() {
                sink.error(v.span(), "`name` must not be empty");
                return None;
            }
            if seen.contains(&n) {
                sink.error(v.span(), format!("duplicate responsibility `{n}`"));
                return None;
            }
            seen.push(n.clone());
            Some(n)
        });
        let schedule = required(sink, entry, t, "schedule", "a responsibility").and_then(|v| {
            let s = reader::string(sink, v, "`schedule`")?;
            match check_cron(&s) {
                Ok(()) => Some(s),
                Err(message) => {
                    sink.error(v.span(), message);
                    None
                }
            }
        });
        let mut responsibility = Responsibility {
            instructions: get(t, "instructions")
                .and_then(|v| reader::string(sink, v, "`instructions`"))
                .unwrap_or_default(),
            tools: match get(t, "tools") {
                Some(v) => tools.check(sink, v, "tools").unwrap_or_default(),
                None => Vec::new(),
            },
            ..Responsibility::default()
        };
        if let Some(v) = get(t, "timezone")
            && let Some(zone) = time_zone(sink, v)
        {
            responsibility.timezone = zone;
        }
        if let Some(v) = get(t, "to") {
            responsibility.to = recipients(sink, v);
        }
        if let Some(v) = get(t, "subject") {
            // A template that sees `now` and `responsibility`, rendered when the answer is
            // composed: it must compile now.
            responsibility.subject =
                one_line(sink, v, "subject", SUBJECT_MAX_CHARS).filter(|text| {
                    match protege_core::Template::compile("subject", text.as_str()) {
                        Ok(_) => true,
                        Err(e) => {
                            sink.error(v.span(), format!("`subject` is not a valid template: {e}"));
                            false
                        }
                    }
                });
        }
        if let Some(v) = get(t, "catch_up")
            && let Some(catch_up) = one_of(sink, v, "catch_up", &CATCH_UP, CatchUp::parse)
        {
            responsibility.catch_up = catch_up;
        }
        // A persona with any problem is rejected whole; the entry is kept for the others.
        if let (Some(name), Some(schedule)) = (name, schedule) {
            out.push(Responsibility {
                name,
                schedule,
                ..responsibility
            });
        }
    }
    out
}

/// `timezone`: an IANA name, as the time zone database spells it.
fn time_zone(sink: &mut Sink<'_>, value: &Value<'_>) -> Option<Tz> {
    let name = reader::text(sink, value, "`timezone`")?;
    if let Ok(zone) = name.parse::<Tz>() {
        return Some(zone);
    }
    let names = chrono_tz::TZ_VARIANTS.iter().map(|z| z.name());
    let message = match did_you_mean(name, names) {
        Some(near) => format!("unknown time zone `{name}`, did you mean `{near}`?"),
        None => format!(
            "unknown time zone `{name}`: give an IANA name such as `Europe/Paris`, `America/New_York` or `UTC`"
        ),
    };
    sink.error(value.span(), message);
    None
}

/// `to`: at least one bare address.
fn recipients(sink: &mut Sink<'_>, value: &Value<'_>) -> Vec<String> {
    let to = addresses(sink, value, "to");
    if matches!(value.get_ref(), toml::de::DeValue::Array(a) if a.is_empty()) {
        sink.error(
            value.span(),
            "`to` must name at least one address, or be left out",
        );
    }
    to
}

/// Checks a standard 5-field cron expression (minute hour day-of-month month day-of-week).
///
/// Remembers the verdicts of the last schedules seen: a folder of personas repeats a few
/// schedules, and parsing one costs more than the rest of its persona file.
fn check_cron(schedule: &str) -> Result<(), String> {
    use std::collections::HashMap;
    use std::sync::{Mutex, PoisonError};
    static SEEN: Mutex<Option<HashMap<String, Result<(), String>>>> = Mutex::new(None);
    const REMEMBERED: usize = 256;
    if let Some(verdict) = SEEN
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .and_then(|seen| seen.get(schedule))
    {
        return verdict.clone();
    }
    let verdict = parse_cron(schedule);
    let mut seen = SEEN.lock().unwrap_or_else(PoisonError::into_inner);
    let seen = seen.get_or_insert_with(HashMap::new);
    if seen.len() >= REMEMBERED {
        seen.clear();
    }
    seen.insert(schedule.to_owned(), verdict.clone());
    verdict
}

fn parse_cron(schedule: &str) -> Result<(), String> {
    let fields = schedule.split_whitespace().count();
    if fields != 5 {
        return Err(format!(
            "invalid schedule `{schedule}`: expected 5 fields (minute hour day-of-month month day-of-week), found {fields}"
        ));
    }
    protege_core::parse_cron(schedule).map(|_| ()).map_err(|e| {
        let detail = match e {
            croner::errors::CronError::ComponentError(m)
            | croner::errors::CronError::InvalidPattern(m)
            | croner::errors::CronError::IllegalCharacters(m) => m,
            other => other.to_string(),
        };
        format!(
            "invalid schedule `{schedule}`: {}",
            lowercase_first(&detail)
        )
    })
}
