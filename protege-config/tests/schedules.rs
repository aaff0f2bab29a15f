//! The keys of `[[responsibilities]]` that put a task on time (DESIGN §19): the time zone
//! its schedule is read in, where its answer goes and with which subject, what a missed
//! slot does, and `[agent] max_catch_up`. Each value is read with its default, and each
//! mistake is reported at its place in one sentence.

use std::path::Path;

use protege_config::{Persona, Registry};
use protege_core::{CatchUp, PersonaAgent, Responsibility, Tz};
use serde_json::json;

/// A reply chain, so that the rest of each file is valid.
const CHAIN: &str = "\n[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"Hello.\"\n";

/// A responsibility with its two required keys; the keys of a test follow it.
const DIGEST: &str = "[[responsibilities]]\nname = \"digest\"\nschedule = \"30 2 * * *\"\n";

fn parse(source: &str) -> Result<Persona, protege_config::Diagnostics> {
    Persona::parse(
        Path::new("p.toml"),
        &format!("{source}\n{CHAIN}"),
        &Registry::new(),
    )
}

/// The responsibilities of `source`, which must load.
fn responsibilities(source: &str) -> Vec<Responsibility> {
    match parse(source) {
        Ok(p) => p.info.responsibilities.clone(),
        Err(d) => panic!("{source}\n{d}"),
    }
}

/// The one responsibility of `DIGEST` followed by `keys`.
fn digest(keys: &str) -> Responsibility {
    let mut all = responsibilities(&format!("{DIGEST}{keys}"));
    assert_eq!(all.len(), 1);
    all.remove(0)
}

/// The headlines of the problems of `source`, which must not load.
fn errors(source: &str) -> Vec<String> {
    match parse(source) {
        Ok(_) => panic!("loaded: {source}"),
        Err(d) => d.iter().map(|d| d.headline()).collect(),
    }
}

/// The one problem of `DIGEST` followed by `keys`.
fn error(keys: &str) -> String {
    let mut errors = errors(&format!("{DIGEST}{keys}"));
    assert_eq!(errors.len(), 1, "{errors:#?}");
    errors.remove(0)
}

#[test]
fn every_key_of_a_responsibility_on_time_is_read() {
    assert_eq!(
        digest(
            "timezone = \"Europe/Paris\"\nto = [\"team@acme.test\", \" lead@acme.test \"]\nsubject = \"Open threads\"\ncatch_up = \"all\"\n"
        ),
        Responsibility {
            name: "digest".into(),
            schedule: "30 2 * * *".into(),
            timezone: Tz::Europe__Paris,
            to: vec!["team@acme.test".into(), "lead@acme.test".into()],
            subject: Some("Open threads".into()),
            catch_up: CatchUp::All,
            ..Responsibility::default()
        }
    );
    assert_eq!(
        digest("catch_up = \"none\"\ntimezone = \"America/New_York\"\n"),
        Responsibility {
            name: "digest".into(),
            schedule: "30 2 * * *".into(),
            timezone: Tz::America__New_York,
            catch_up: CatchUp::None,
            ..Responsibility::default()
        }
    );
}

#[test]
fn the_defaults_are_utc_no_recipient_no_subject_and_the_latest_slot() {
    let r = digest("");
    assert_eq!(
        (r.timezone, r.to, r.subject, r.catch_up),
        (Tz::UTC, Vec::new(), None, CatchUp::Latest)
    );
    // The defaults are left out of the serialised form, as `tools` is.
    assert_eq!(
        serde_json::to_value(digest("")).unwrap(),
        json!({"name": "digest", "schedule": "30 2 * * *", "instructions": ""})
    );
    assert_eq!(
        serde_json::to_value(digest(
            "timezone = \"Europe/Paris\"\nto = [\"team@acme.test\"]\nsubject = \"Open threads\"\ncatch_up = \"none\"\n"
        ))
        .unwrap(),
        json!({"name": "digest", "schedule": "30 2 * * *", "instructions": "",
               "timezone": "Europe/Paris", "to": ["team@acme.test"],
               "subject": "Open threads", "catch_up": "none"})
    );
}

#[test]
fn max_catch_up_is_read_with_its_default() {
    let agent = |source: &str| -> PersonaAgent {
        parse(source)
            .unwrap_or_else(|d| panic!("{d}"))
            .info
            .agent
            .clone()
            .expect("an [agent] table")
    };
    assert_eq!(agent("[agent]").max_catch_up, 24);
    assert_eq!(agent("[agent]\nmax_catch_up = 3").max_catch_up, 3);
    assert_eq!(
        errors("[agent]\nmax_catch_up = 0"),
        ["p.toml:2:16: error: `max_catch_up` must be a positive integer, found `0`"]
    );
    assert_eq!(
        errors("[agent]\nmax_catch_up = \"24\""),
        ["p.toml:2:16: error: `max_catch_up` must be a positive integer, found a string"]
    );
}

#[test]
fn an_unknown_time_zone_is_reported_at_its_value() {
    assert_eq!(
        error("timezone = \"Europe/Pariss\"\n"),
        "p.toml:4:12: error: unknown time zone `Europe/Pariss`, did you mean `Europe/Paris`?"
    );
    assert_eq!(
        error("timezone = \"europe/paris\"\n"),
        "p.toml:4:12: error: unknown time zone `europe/paris`, did you mean `Europe/Paris`?"
    );
    assert_eq!(
        error("timezone = \"Paris\"\n"),
        "p.toml:4:12: error: unknown time zone `Paris`: give an IANA name such as `Europe/Paris`, `America/New_York` or `UTC`"
    );
    assert_eq!(
        error("timezone = 1\n"),
        "p.toml:4:12: error: `timezone` must be a string, found an integer"
    );
}

#[test]
fn each_recipient_must_be_an_address() {
    assert_eq!(
        error("to = [\"team@acme.test\", \"the team\"]\n"),
        "p.toml:4:25: error: `the team` is not an email address"
    );
    assert_eq!(
        error("to = \"team@acme.test\"\n"),
        "p.toml:4:6: error: `to` must be an array, found a string"
    );
    assert_eq!(
        error("to = [1]\n"),
        "p.toml:4:7: error: `to[0]` must be a string, found an integer"
    );
    assert_eq!(
        error("to = []\n"),
        "p.toml:4:6: error: `to` must name at least one address, or be left out"
    );
}

#[test]
fn the_subject_is_one_line_of_text() {
    assert_eq!(
        error("subject = \"Open\\nthreads\"\n"),
        "p.toml:4:11: error: `subject` must be one line: no control characters (line breaks, tabs, NUL …)"
    );
    assert_eq!(
        error("subject = \"  \"\n"),
        "p.toml:4:11: error: `subject` must not be empty"
    );
    assert_eq!(
        error(&format!("subject = \"{}\"\n", "x".repeat(201))),
        "p.toml:4:11: error: `subject` must be at most 200 characters, found 201"
    );
    assert_eq!(
        error("subject = [\"Open threads\"]\n"),
        "p.toml:4:11: error: `subject` must be a string, found an array"
    );
}

#[test]
fn catch_up_is_one_of_three_words() {
    assert_eq!(
        error("catch_up = \"lattest\"\n"),
        "p.toml:4:12: error: unknown `catch_up` value `lattest`, did you mean `latest`?"
    );
    assert_eq!(
        error("catch_up = \"every\"\n"),
        "p.toml:4:12: error: unknown `catch_up` value `every`, expected `latest`, `all` or `none`"
    );
    assert_eq!(
        error("catch_up = true\n"),
        "p.toml:4:12: error: `catch_up` must be a string, found a boolean"
    );
}

#[test]
fn a_schedule_error_keeps_its_position() {
    assert_eq!(
        errors(
            "[[responsibilities]]\nname = \"digest\"\nschedule = \"30 25 * * *\"\ntimezone = \"Europe/Paris\"\n"
        ),
        ["p.toml:3:12: error: invalid schedule `30 25 * * *`: number out of bounds"]
    );
    assert_eq!(
        errors("[[responsibilities]]\nname = \"digest\"\nschedule = \"0 8 * *\"\n"),
        [
            "p.toml:3:12: error: invalid schedule `0 8 * *`: expected 5 fields (minute hour day-of-month month day-of-week), found 4"
        ]
    );
    // Every problem of an entry is reported, each at its own place.
    assert_eq!(
        errors(
            "[[responsibilities]]\nname = \"digest\"\nschedule = \"0 8 * *\"\ntimezone = \"Mars/Olympus\"\ncatch_up = \"some\"\n"
        ),
        [
            "p.toml:3:12: error: invalid schedule `0 8 * *`: expected 5 fields (minute hour day-of-month month day-of-week), found 4",
            "p.toml:4:12: error: unknown time zone `Mars/Olympus`: give an IANA name such as `Europe/Paris`, `America/New_York` or `UTC`",
            "p.toml:5:12: error: unknown `catch_up` value `some`, expected `latest`, `all` or `none`",
        ]
    );
}

#[test]
fn a_misspelt_key_is_named_with_the_right_one() {
    assert_eq!(
        error("time_zone = \"Europe/Paris\"\n"),
        "p.toml:4:1: error: unknown key `time_zone` in `[[responsibilities]]`, did you mean `timezone`?"
    );
    assert_eq!(
        error("catchup = \"all\"\n"),
        "p.toml:4:1: error: unknown key `catchup` in `[[responsibilities]]`, did you mean `catch_up`?"
    );
}
