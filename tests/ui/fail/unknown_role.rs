fn main() {
    let _chain = protege::resolvers! {
        use LoadText("You are {{ persona.name }}.", role = sytem);
    };
}
