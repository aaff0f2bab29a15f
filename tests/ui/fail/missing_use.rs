fn main() {
    let _chain = protege::resolvers! {
        LoadText("You are {{ persona.name }}.");
    };
}
