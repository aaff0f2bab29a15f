use protege::{Context, Message, Resolver, Result, Role, message};

struct Greeting {
    shout: bool,
}

impl Greeting {
    fn new() -> Self {
        Self { shout: false }
    }

    fn shout(mut self, yes: bool) -> Self {
        self.shout = yes;
        self
    }
}

impl Resolver for Greeting {
    type Output = Message;
    async fn resolve(&self, _ctx: &Context) -> Result<Message> {
        Ok(message(
            Role::System,
            if self.shout { "HELLO." } else { "Hello." },
        ))
    }
}

fn main() {
    let _chain = protege::resolvers! {
        use Greeting(shuot = true);
    };
}
