fn main() {
    let _chain = protege::resolvers! {
        use ThreadHistory(limit = 10, include_tool_calls = false, limit = 20);
    };
}
