fn main() {
    let _chain = protege::resolvers! {
        use ThreadHistory(limit = 10, role = user);
    };
}
