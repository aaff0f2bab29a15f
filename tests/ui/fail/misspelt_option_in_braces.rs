use protege::{Context, Message, Resolver, Result, Role, message};
use serde::Deserialize;

#[derive(Deserialize, protege::Options)]
#[serde(deny_unknown_fields)]
struct OpenOrders {
    statuses: Vec<String>,
    #[serde(default)]
    heading: Option<String>,
    #[serde(default)]
    limit: u32,
}

impl Resolver for OpenOrders {
    type Output = Message;
    async fn resolve(&self, _ctx: &Context) -> Result<Message> {
        let heading = self.heading.clone().unwrap_or_default();
        Ok(message(Role::System, format!("{heading} {:?} {}", self.statuses, self.limit)))
    }
}

fn main() {
    let _chain = protege::resolvers! {
        use OpenOrders { statsues = ["packing", "shipped"] };
    };
}
