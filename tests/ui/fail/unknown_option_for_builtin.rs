fn main() {
    let _chain = protege::resolvers! {
        use ThreadHistory(limt = 10);
    };
}
