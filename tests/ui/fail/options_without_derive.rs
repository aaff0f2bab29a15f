use protege::{Context, Message, Resolver, Result, Role, message};

struct Greeting {
    text: String,
}

impl Resolver for Greeting {
    type Output = Message;
    async fn resolve(&self, _ctx: &Context) -> Result<Message> {
        Ok(message(Role::System, self.text.clone()))
    }
}

fn main() {
    let _chain = protege::resolvers! {
        use Greeting { text = "Hello." };
    };
}
