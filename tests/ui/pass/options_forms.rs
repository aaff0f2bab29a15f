//! Resolvers deriving `protege::Options`: their options in braces, by serde's names, with
//! serde's defaults for the options left out.
use std::path::PathBuf;

use protege::{
    AppConfig, Chain, Context, Message, Options, PersonaInfo, Resolver, Responsibility, Result,
    Role, Trigger, message,
};
use serde::Deserialize;

/// Required, defaulted, optional and skipped fields, with renames and an alias.
#[derive(Debug, PartialEq, Deserialize, protege::Options)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Digest {
    statuses: Vec<String>,
    #[serde(default = "default_heading")]
    heading: String,
    #[serde(default)]
    max_items: u32,
    #[serde(rename = "tone", alias = "voice")]
    style: Option<String>,
    #[serde(default)]
    role: Option<Role>,
    prompt: Option<PathBuf>,
    r#type: Option<String>,
    #[serde(skip)]
    calls: u32,
}

fn default_heading() -> String {
    "Open orders:".to_owned()
}

impl Resolver for Digest {
    type Output = Message;
    async fn resolve(&self, _ctx: &Context) -> Result<Message> {
        Ok(message(self.role.unwrap_or(Role::System), format!("{self:?}")))
    }
}

/// The container's default fills every option left out; kebab-case names are written with
/// `_` in `resolvers!`.
#[derive(Debug, PartialEq, Deserialize, protege::Options)]
#[serde(default, rename_all = "kebab-case")]
struct Footer {
    sign_off: String,
    blank_lines: u8,
}

impl Default for Footer {
    fn default() -> Self {
        Self {
            sign_off: "Regards".to_owned(),
            blank_lines: 1,
        }
    }
}

impl Resolver for Footer {
    type Output = Message;
    async fn resolve(&self, _ctx: &Context) -> Result<Message> {
        Ok(message(Role::System, format!("{self:?}")))
    }
}

/// A unit struct: no options at all.
#[derive(Deserialize, protege::Options)]
struct Quiet;

impl Resolver for Quiet {
    type Output = ();
    async fn resolve(&self, _ctx: &Context) -> Result<()> {
        Ok(())
    }
}

fn main() {
    let chain = protege::resolvers! {
        use Digest { statuses = ["packing", "shipped"] };
        use Digest {
            statuses = ["packing"],
            heading = "Open:",
            maxItems = 3,
            voice = "dry",
            role = user,
            prompt = "prompts/digest.md",
            r#type = "short",
        };
        use Footer {};
        use Footer { sign_off = "Cheers", blank_lines = 2 };
        use self::Quiet {};
    };
    assert_eq!(
        chain.names(),
        ["Digest", "Digest", "Footer", "Footer", "Quiet"]
    );

    assert_eq!(
        Digest::NAMES,
        ["statuses", "heading", "maxItems", "tone", "role", "prompt", "type"]
    );
    assert_eq!(Digest::REQUIRED, ["statuses"]);
    assert_eq!(Footer::NAMES, ["sign-off", "blank-lines"]);
    assert!(Footer::REQUIRED.is_empty());
    assert!(Quiet::NAMES.is_empty());

    let ctx = Context::builder(
        PersonaInfo::new("digest"),
        AppConfig::new("."),
        Trigger::Responsibility(Responsibility {
            name: "daily".into(),
            schedule: "0 8 * * *".into(),
            instructions: "Sum up.".into(),
            ..Responsibility::default()
        }),
    )
    .build();
    let messages = futures::executor::block_on(chain.resolve(&ctx)).unwrap();
    let texts: Vec<(Role, String)> = messages
        .iter()
        .map(|m| (m.role, m.content.text()))
        .collect();
    assert_eq!(
        texts,
        [
            (
                Role::System,
                r#"Digest { statuses: ["packing", "shipped"], heading: "Open orders:", max_items: 0, style: None, role: None, prompt: None, type: None, calls: 0 }"#.to_owned()
            ),
            (
                Role::User,
                r#"Digest { statuses: ["packing"], heading: "Open:", max_items: 3, style: Some("dry"), role: Some(User), prompt: Some("prompts/digest.md"), type: Some("short"), calls: 0 }"#.to_owned()
            ),
            (
                Role::System,
                r#"Footer { sign_off: "Regards", blank_lines: 1 }"#.to_owned()
            ),
            (
                Role::System,
                r#"Footer { sign_off: "Cheers", blank_lines: 2 }"#.to_owned()
            ),
        ]
    );
}
