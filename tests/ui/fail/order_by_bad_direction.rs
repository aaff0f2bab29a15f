fn main() {
    let _chain = protege::resolvers! {
        use LoadRecord(table = "accounts", order_by = "id downwards");
    };
}
