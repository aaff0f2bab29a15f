fn main() {
    let _chain = protege::resolvers! {
        use ThreadHistory(limit = 20, window = stabel);
    };
}
