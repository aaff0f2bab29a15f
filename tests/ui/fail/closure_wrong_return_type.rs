use protege::Context;

fn main() {
    let _chain = protege::resolvers! {
        use LoadText(|ctx: &Context| ctx.persona().name.clone());
    };
}
