//! Erasing a correspondent (§15): what `forget` removes, what it leaves, its dry run and
//! its errors, on every configured backend.

#[path = "../../protege-core/tests/common/mod.rs"]
mod common;
mod erasure;

use std::collections::HashMap;

use common::{on_each_backend, reply_ctx};
use erasure::{message_ids, setup, tables};
use protege::db::{self, Forgotten};
use protege_core::{ErrorKind, ThreadHistory};
use sea_orm::DatabaseConnection;
use serde_json::json;

/// ThreadHistory for Bob's reply in the shared thread: its contents, in order.
async fn bobs_history(db: &DatabaseConnection) -> Vec<String> {
    let ctx = reply_ctx(db, "<s-3@example.com>").await;
    let messages = protege_core::Resolver::resolve(&ThreadHistory::new(), &ctx)
        .await
        .expect("history");
    messages.iter().map(|m| m.content.text()).collect()
}

const ANN_REMOVED: Forgotten = Forgotten {
    messages: 4,
    attachments: 2,
    tool_uses: 3,
    runs: 2,
    run_rounds: 3,
    thread_summaries: 2,
    message_addresses: 10,
    email_threads: 1,
    outbox: 0,
};

#[tokio::test]
async fn a_dry_run_counts_and_changes_nothing() {
    on_each_backend("forget_dry_run", |db, _| async move {
        setup(&db).await;
        let names: HashMap<i64, String> = message_ids(&db).await.into_iter().collect();
        let before = tables(&db, &names).await;
        let counted = db::forget(&db, "ann@example.com", true).await.unwrap();
        assert_eq!(counted, ANN_REMOVED);
        assert_eq!(tables(&db, &names).await, before);
        // The real run removes what the dry run counted.
        assert_eq!(
            db::forget(&db, "ann@example.com", false).await.unwrap(),
            ANN_REMOVED
        );
    })
    .await;
}

#[tokio::test]
async fn forget_removes_exactly_the_correspondents_rows() {
    on_each_backend("forget_removes", |db, _| async move {
        setup(&db).await;
        let names: HashMap<i64, String> = message_ids(&db).await.into_iter().collect();
        let before = bobs_history(&db).await;
        assert_eq!(
            before,
            [
                "From: Ann Example <ann@example.com>\nTo: Acme Support <support@acme.test>\nCc: bob@example.com\nDate: Mon, 5 Jan 2026 10:00:00 +0000\nSubject: Order A-1\n\nOrder A-1 has not arrived.\n\nAttachments:\n- photo.png (image/png, 3 bytes, id: att-s1)",
                // Its two tool rounds: an assistant turn and the tool's result each.
                "",
                "shipped",
                "",
                "shipped",
                "From: Acme Support <support@acme.test>\nTo: ann@example.com\nCc: bob@example.com\nDate: Tue, 6 Jan 2026 10:00:00 +0000\nSubject: Order A-1\n\nIt left the warehouse.",
            ]
        );

        // Any case, with a display name.
        let removed = db::forget(&db, "ANN <Ann@Example.COM>", false).await.unwrap();
        assert_eq!(removed, ANN_REMOVED);
        assert_eq!(
            tables(&db, &names).await,
            json!({
                "email_threads": ["Order A-1", "Parcel"],
                "messages": ["<s-3@example.com>", "<b-1@example.com>"],
                "attachments": ["<b-1@example.com> att-b1"],
                "tool_uses": ["<s-3@example.com> call-s3"],
                "runs": ["run_bob_1", "run_bob_2", "run_digest"],
                "run_rounds": ["run_bob_1 0", "run_digest 0"],
                "thread_summaries": ["Bob's parcel is with a neighbour."],
                "message_addresses": [
                    "<s-3@example.com> bob@example.com",
                    "<s-3@example.com> support@acme.test",
                    "<b-1@example.com> bob@example.com",
                    "<b-1@example.com> support@acme.test",
                ],
            })
        );
        // Bob's reply no longer shows Ann's mail.
        assert_eq!(bobs_history(&db).await, Vec::<String>::new());

        // Nothing is left to forget; Bob is still there to forget.
        assert_eq!(
            db::forget(&db, "ann@example.com", false).await.unwrap(),
            Forgotten::default()
        );
        assert_eq!(
            db::forget(&db, "Bob <BOB@example.com>", false)
                .await
                .unwrap(),
            Forgotten {
                messages: 2,
                attachments: 1,
                tool_uses: 1,
                runs: 2,
                run_rounds: 1,
                thread_summaries: 1,
                message_addresses: 4,
                email_threads: 2,
                outbox: 0,
            }
        );
        assert_eq!(
            tables(&db, &names).await,
            json!({
                "email_threads": [], "messages": [], "attachments": [], "tool_uses": [],
                "runs": ["run_digest"], "run_rounds": ["run_digest 0"],
                "thread_summaries": [], "message_addresses": [],
            })
        );
    })
    .await;
}

#[tokio::test]
async fn an_address_that_is_no_address_is_invalid_input() {
    on_each_backend("forget_invalid", |db, _| async move {
        setup(&db).await;
        let names: HashMap<i64, String> = message_ids(&db).await.into_iter().collect();
        let before = tables(&db, &names).await;
        let long = format!("{}@example.com", "a".repeat(320));
        for (address, message) in [
            ("", "the address to forget is empty"),
            ("ann", "`ann` is not an email address: it has no `@`"),
            (
                "ann smith@example.com",
                "`ann smith@example.com` is not an email address: it has a space inside",
            ),
            (
                long.as_str(),
                "the address to forget is 332 characters long, over the limit of 320",
            ),
        ] {
            for dry_run in [false, true] {
                let err = db::forget(&db, address, dry_run).await.unwrap_err();
                assert_eq!(err.kind(), ErrorKind::InvalidInput);
                assert_eq!(err.to_string(), message);
            }
        }
        assert_eq!(tables(&db, &names).await, before);
    })
    .await;
}
