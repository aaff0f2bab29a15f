fn main() {
    let _chain = protege::resolvers! {
        use LoadFile("prompts/{{ persona.name | slugify }.md");
    };
}
