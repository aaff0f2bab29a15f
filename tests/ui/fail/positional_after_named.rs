fn main() {
    let _chain = protege::resolvers! {
        use LoadFile(role = user, "prompts/agent.md");
    };
}
