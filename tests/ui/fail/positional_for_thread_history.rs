fn main() {
    let _chain = protege::resolvers! {
        use ThreadHistory(10);
    };
}
