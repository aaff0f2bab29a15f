//! OpenThreads (§19): the persona's threads waiting for an answer, one line each, on every
//! configured backend.

mod common;

use common::{on_each_backend, support_persona};
use protege::db;
use protege::db::entities::outbox;
use protege_core::{
    AppConfig, Context, OpenThreads, PersonaInfo, Resolver, Responsibility, Role, Trigger,
};
use sea_orm::{ActiveModelTrait, ActiveValue::NotSet, DatabaseConnection, Set};
use serde_json::{Value, json};

const SUPPORT: &str = "Acme Support <support@acme.test>";

/// The run's clock: Tuesday 10 March 2026, noon.
const NOW: &str = "2026-03-10T12:00:00Z";

fn msg(id: &str, from: &str, to: &str, sent_at: &str) -> Value {
    let outbound = from == SUPPORT;
    json!({
        "message_id": id,
        "direction": if outbound { "outbound" } else { "inbound" },
        "from": from, "to": [to], "cc": [],
        "subject": "ignored", "sent_at": sent_at, "text_body": "text",
    })
}

/// Threads 1 to 8, in this order.
fn fixture() -> Value {
    json!({ "threads": [
        // 1: answered once, then asked again twice: waiting since the first question after
        // the answer.
        {"subject": "Refund for order A-1", "messages": [
            msg("<a-1@example.com>", "Ann <ann@example.com>", SUPPORT, "2026-03-08T09:00:00Z"),
            msg("<a-2@acme.test>", SUPPORT, "ann@example.com", "2026-03-08T10:00:00Z"),
            msg("<a-3@example.com>", "Ann <ann@example.com>", SUPPORT, "2026-03-09T08:30:00Z"),
            msg("<a-4@example.com>", "Ann <Ann@Example.com>", SUPPORT, "2026-03-09T09:15:00Z"),
        ]},
        // 2: its newest message is the persona's answer.
        {"subject": "Answered", "messages": [
            msg("<b-1@example.com>", "bob@example.com", SUPPORT, "2026-03-09T10:00:00Z"),
            msg("<b-2@acme.test>", SUPPORT, "bob@example.com", "2026-03-09T11:00:00Z"),
        ]},
        // 3: waiting, but for more than a week.
        {"subject": "Old question", "messages": [
            msg("<c-1@example.com>", "Carol <carol@example.com>", SUPPORT, "2026-02-20T16:45:00Z"),
        ]},
        // 4: a subject with line breaks and control characters.
        {"subject": "Broken\r\nsubject\u{7} here", "messages": [
            msg("<d-1@example.com>", "dan@example.com", SUPPORT, "2026-03-07T07:05:00Z"),
        ]},
        // 5: another persona's.
        {"subject": "Sales question", "messages": [
            msg("<e-1@example.com>", "eve@example.com", "sales@acme.test", "2026-03-09T12:00:00Z"),
        ]},
        // 6: answered after the run's clock: still waiting as of now.
        {"subject": "Answered later", "messages": [
            msg("<f-1@example.com>", "fay@example.com", SUPPORT, "2026-03-10T08:00:00Z"),
            msg("<f-2@acme.test>", SUPPORT, "fay@example.com", "2026-03-11T08:00:00Z"),
        ]},
        // 7: written after the run's clock.
        {"subject": "Tomorrow", "messages": [
            msg("<g-1@example.com>", "gus@example.com", SUPPORT, "2026-03-11T09:00:00Z"),
        ]},
        // 8: its newest message is a reply that waits for approval: not sent, so the thread
        // still waits.
        {"subject": "Draft pending", "messages": [
            msg("<h-1@example.com>", "hal@example.com", SUPPORT, "2026-03-08T07:00:00Z"),
            msg("<h-2@acme.test>", SUPPORT, "hal@example.com", "2026-03-08T07:30:00Z"),
        ]},
    ]})
}

async fn setup(db: &DatabaseConnection) {
    db::import_fixture_str(db, &fixture().to_string())
        .await
        .expect("import");
    // The reply of thread 8 waits for a person.
    let draft = db::message_row_of(db, "<h-2@acme.test>")
        .await
        .expect("read")
        .expect("stored");
    let at = "2026-03-08T07:30:00Z".parse().unwrap();
    outbox::ActiveModel {
        id: NotSet,
        message_id: Set(draft),
        run_id: Set(None),
        persona: Set("support".into()),
        state: Set("waiting".into()),
        reason: Set(Some("approval".into())),
        held_reason: Set(None),
        envelope_from: Set("support@acme.test".into()),
        recipients: Set("[\"hal@example.com\"]".into()),
        refused_recipients: Set("[]".into()),
        attempts: Set(0),
        next_attempt_at: Set(None),
        lease_owner: Set(None),
        lease_until: Set(None),
        smtp_reply: Set(None),
        approved_by: Set(None),
        approved_at: Set(None),
        queued_at: Set(None),
        sent_at: Set(None),
        raw: Set(String::new()),
        created_at: Set(at),
        updated_at: Set(at),
    }
    .insert(db)
    .await
    .expect("outbox row");
}

/// What `r` contributes to the digest of `persona` at [`NOW`]: the role and the text.
async fn digest(
    db: &DatabaseConnection,
    persona: PersonaInfo,
    r: OpenThreads,
) -> Option<(Role, String)> {
    let digest = Responsibility {
        name: "digest".into(),
        schedule: "0 8 * * *".into(),
        ..Responsibility::default()
    };
    let ctx = Context::builder(
        persona,
        AppConfig::new("."),
        Trigger::Responsibility(digest),
    )
    .now(NOW.parse().unwrap())
    .db(db.clone())
    .build();
    r.resolve(&ctx)
        .await
        .expect("resolve")
        .map(|m| (m.role, m.content.text()))
}

#[tokio::test]
async fn lists_the_threads_waiting_for_an_answer_longest_waiting_first() {
    on_each_backend("open_threads_default", |db, _| async move {
        setup(&db).await;
        assert_eq!(
            digest(&db, support_persona(), OpenThreads::new()).await,
            Some((
                Role::System,
                [
                    "- Broken subject here (1 message, waiting since Sat, 7 Mar 2026 07:05:00 +0000, from dan@example.com, thread 4)",
                    "- Draft pending (1 message, waiting since Sun, 8 Mar 2026 07:00:00 +0000, from hal@example.com, thread 8)",
                    "- Refund for order A-1 (4 messages, waiting since Mon, 9 Mar 2026 08:30:00 +0000, from ann@example.com, thread 1)",
                    "- Answered later (1 message, waiting since Tue, 10 Mar 2026 08:00:00 +0000, from fay@example.com, thread 6)",
                ]
                .join("\n")
            ))
        );
    })
    .await;
}

#[tokio::test]
async fn the_window_and_the_limit() {
    on_each_backend("open_threads_window", |db, _| async move {
        setup(&db).await;
        // A month back, the old question waits too, the longest of all.
        let month = digest(
            &db,
            support_persona(),
            OpenThreads::new().within(std::time::Duration::from_secs(30 * 86_400)),
        )
        .await
        .map(|(_, text)| text);
        assert_eq!(
            month.as_deref().and_then(|t| t.lines().next()),
            Some("- Old question (1 message, waiting since Fri, 20 Feb 2026 16:45:00 +0000, from carol@example.com, thread 3)")
        );
        assert_eq!(month.map(|t| t.lines().count()), Some(5));
        // A day and a half back: only the threads asked since Monday.
        assert_eq!(
            digest(
                &db,
                support_persona(),
                OpenThreads::new().within(std::time::Duration::from_secs(36 * 3600)),
            )
            .await,
            Some((
                Role::System,
                [
                    "- Refund for order A-1 (4 messages, waiting since Mon, 9 Mar 2026 08:30:00 +0000, from ann@example.com, thread 1)",
                    "- Answered later (1 message, waiting since Tue, 10 Mar 2026 08:00:00 +0000, from fay@example.com, thread 6)",
                ]
                .join("\n")
            ))
        );
        // The limit keeps the longest waiting.
        assert_eq!(
            digest(&db, support_persona(), OpenThreads::new().limit(2)).await,
            Some((
                Role::System,
                [
                    "- Broken subject here (1 message, waiting since Sat, 7 Mar 2026 07:05:00 +0000, from dan@example.com, thread 4)",
                    "- Draft pending (1 message, waiting since Sun, 8 Mar 2026 07:00:00 +0000, from hal@example.com, thread 8)",
                ]
                .join("\n")
            ))
        );
        assert_eq!(
            digest(&db, support_persona(), OpenThreads::new().limit(0)).await,
            None
        );
    })
    .await;
}

#[tokio::test]
async fn a_template_and_a_role_of_its_own() {
    on_each_backend("open_threads_template", |db, _| async move {
        setup(&db).await;
        let r = OpenThreads::new()
            .within(std::time::Duration::from_secs(36 * 3600))
            .role(Role::User)
            .try_template_str(
                "{{ thread.id }}|{{ thread.subject }}|{{ thread.messages }}|{{ thread.since }}|{{ thread.from }}|{{ persona.name }}",
            )
            .expect("template");
        assert_eq!(
            digest(&db, support_persona(), r).await,
            Some((
                Role::User,
                "1|Refund for order A-1|4|Mon, 9 Mar 2026 08:30:00 +0000|ann@example.com|support\n\
                 6|Answered later|1|Tue, 10 Mar 2026 08:00:00 +0000|fay@example.com|support"
                    .to_owned()
            ))
        );
        // A line that renders blank is left out; all of them blank, nothing.
        let blank = OpenThreads::new()
            .try_template_str("{% if thread.id == 4 %}four{% endif %}")
            .expect("template");
        assert_eq!(
            digest(&db, support_persona(), blank).await,
            Some((Role::System, "four".to_owned()))
        );
        let none = OpenThreads::new()
            .try_template_str("  ")
            .expect("template");
        assert_eq!(digest(&db, support_persona(), none).await, None);
    })
    .await;
}

#[tokio::test]
async fn nothing_when_no_thread_waits() {
    on_each_backend("open_threads_none", |db, _| async move {
        setup(&db).await;
        // Sales waits on thread 5 only, and not in the last hour.
        let mut sales = support_persona();
        sales.name = "sales".into();
        sales.addresses = vec!["Sales <SALES@acme.test>".into()];
        assert_eq!(
            digest(&db, sales.clone(), OpenThreads::new()).await,
            Some((
                Role::System,
                "- Sales question (1 message, waiting since Mon, 9 Mar 2026 12:00:00 +0000, from eve@example.com, thread 5)"
                    .to_owned()
            ))
        );
        assert_eq!(
            digest(
                &db,
                sales,
                OpenThreads::new().within(std::time::Duration::from_secs(3600))
            )
            .await,
            None
        );
        // A persona of no thread, and one without addresses.
        let mut billing = support_persona();
        billing.addresses = vec!["billing@acme.test".into()];
        assert_eq!(digest(&db, billing, OpenThreads::new()).await, None);
        assert_eq!(
            digest(&db, PersonaInfo::new("nobody"), OpenThreads::new()).await,
            None
        );
    })
    .await;
}
