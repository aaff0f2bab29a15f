fn main() {
    let _chain = protege::resolvers! {
        use LoadRecord(table = "accounts", render_with = |r: &String| r.clone());
    };
}
