fn main() {
    let _chain = protege::resolvers! {
        use ThreadHistory(include_tool_calls = "yes");
    };
}
