use protege::{Context, Resolver, Result};

struct Quiet;

impl Resolver for Quiet {
    type Output = ();
    async fn resolve(&self, _ctx: &Context) -> Result<()> {
        Ok(())
    }
}

fn main() {
    let _chain = protege::resolvers! {
        use Quiet(1);
    };
}
