fn main() {
    let _chain = protege::resolvers! {
        use LoadText(template = "You are {{ persona.name }.");
    };
}
