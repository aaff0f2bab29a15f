//! Token counts: OpenAI's tokenizers for OpenAI models, the characters / 4 estimate for the
//! rest.

use protege_core::{Content, Part, Role, Tokenizer, ToolCall, message};
use serde_json::json;

const REFUND: &str = "Refund for order A-1042, please.";
const CAFE: &str = "Café Lumière: 注文を確認しました";

#[test]
fn known_strings_count_in_both_encodings() {
    // (text, o200k_base, cl100k_base, estimate)
    let cases = [
        ("", 0, 0, 0),
        ("hello world", 2, 2, 3),
        // o200k_base: "Refund" " for" " order" " A" "-" "104" "2" "," " please" ".";
        // cl100k_base splits "Ref" "und".
        (REFUND, 10, 11, 8),
        (CAFE, 10, 15, 6),
        // Special-token text in an email is ordinary text, never one special token.
        ("<|endoftext|>", 7, 7, 4),
    ];
    for (text, o200k, cl100k, estimate) in cases {
        assert_eq!(
            (
                Tokenizer::O200kBase.count(text),
                Tokenizer::Cl100kBase.count(text),
                Tokenizer::Estimate.count(text)
            ),
            (o200k, cl100k, estimate),
            "{text:?}"
        );
    }
}

#[test]
fn the_model_name_chooses_the_tokenizer() {
    let cases = [
        ("gpt-4o", Tokenizer::O200kBase),
        ("gpt-4o-mini", Tokenizer::O200kBase),
        ("gpt-4o-2024-08-06", Tokenizer::O200kBase),
        ("gpt-4.1", Tokenizer::O200kBase),
        ("gpt-4.1-nano", Tokenizer::O200kBase),
        ("gpt-5", Tokenizer::O200kBase),
        ("gpt-5-mini", Tokenizer::O200kBase),
        ("o1", Tokenizer::O200kBase),
        ("o3-mini", Tokenizer::O200kBase),
        ("o4-mini", Tokenizer::O200kBase),
        (
            "ft:gpt-4o-mini-2024-07-18:acme::abc123",
            Tokenizer::O200kBase,
        ),
        ("gpt-4", Tokenizer::Cl100kBase),
        ("gpt-4-turbo", Tokenizer::Cl100kBase),
        ("gpt-3.5-turbo", Tokenizer::Cl100kBase),
        ("claude-sonnet-4-5", Tokenizer::Estimate),
        ("llama-3.1-70b", Tokenizer::Estimate),
        ("", Tokenizer::Estimate),
    ];
    for (model, tokenizer) in cases {
        assert_eq!(Tokenizer::for_model(model), tokenizer, "{model}");
    }
    assert_eq!(Tokenizer::for_optional_model(None), Tokenizer::Estimate);
    assert_eq!(Tokenizer::default(), Tokenizer::Estimate);
    assert_eq!(
        [
            Tokenizer::Estimate.name(),
            Tokenizer::Cl100kBase.name(),
            Tokenizer::O200kBase.name()
        ],
        ["estimate", "cl100k_base", "o200k_base"]
    );
}

#[test]
fn a_message_counts_its_text_calls_and_framing() {
    let call = message(Role::Assistant, "").with_tool_calls(vec![ToolCall::new(
        "call_1",
        "lookup_order",
        json!({"order": "A-1042"}),
    )]);
    // An image counts its Base64 with the estimate (60 characters: 15), whatever the
    // tokenizer.
    let image = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk";
    let parts = message(
        Role::User,
        Content::Parts(vec![
            Part::text(REFUND),
            Part::Image {
                media_type: "image/png".into(),
                data: image.into(),
            },
        ]),
    );
    let text = message(Role::User, CAFE);
    // 4 per message; the call counts `lookup_order` and `{"order":"A-1042"}`.
    let cases = [
        (Tokenizer::Estimate, [4 + 3 + 5, 4 + 8 + 15, 4 + 6]),
        (Tokenizer::Cl100kBase, [4 + 2 + 8, 4 + 11 + 15, 4 + 15]),
        (Tokenizer::O200kBase, [4 + 2 + 8, 4 + 10 + 15, 4 + 10]),
    ];
    for (tokenizer, want) in cases {
        assert_eq!(
            [
                tokenizer.count_message(&call),
                tokenizer.count_message(&parts),
                tokenizer.count_message(&text)
            ],
            want,
            "{tokenizer:?}"
        );
    }
}

#[test]
fn the_explain_sentence_names_the_tokenizer() {
    assert_eq!(
        Tokenizer::Estimate.describe(),
        "tokens are estimated as characters / 4, rounded up, plus 4 per message"
    );
    assert_eq!(
        Tokenizer::O200kBase.describe(),
        "tokens are counted with o200k_base, plus 4 per message"
    );
    assert_eq!(
        Tokenizer::Cl100kBase.describe(),
        "tokens are counted with cl100k_base, plus 4 per message"
    );
}

#[test]
fn hostile_runs_count_in_linear_time() {
    // One piece of a million letters would take minutes of quadratic BPE merges; runs over
    // 1,024 characters are counted slice by slice.
    let letters = "x".repeat(1_000_000);
    let spaces = format!("a{}b", " ".repeat(1_000_000));
    let dashes = "-".repeat(1_000_000);
    let start = std::time::Instant::now();
    let counts = [
        Tokenizer::O200kBase.count(&letters),
        Tokenizer::Cl100kBase.count(&letters),
        Tokenizer::O200kBase.count(&spaces),
        Tokenizer::O200kBase.count(&dashes),
    ];
    let took = start.elapsed();
    assert_eq!(counts, [125_000, 125_000, 7_815, 15_625]);
    assert!(took < std::time::Duration::from_secs(60), "{took:?}");
    // Natural text is never sliced: a 20,000-character body counts as a whole.
    let body = "Thanks for getting back to me, the parcel arrived today. ".repeat(350);
    assert_eq!(Tokenizer::O200kBase.count(&body), 12 * 350 + 1);
    assert_eq!(
        Tokenizer::O200kBase.count(&body),
        tiktoken_rs::o200k_base_singleton().count_ordinary(&body)
    );
}
