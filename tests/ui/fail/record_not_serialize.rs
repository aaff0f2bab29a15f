struct Account {
    name: String,
}

fn main() {
    let _chain = protege::resolvers! {
        use LoadRecord(|_ctx| async move {
            Ok::<_, String>(vec![Account { name: "Alice".into() }])
        }, template = "{{ record.name }}");
    };
}
