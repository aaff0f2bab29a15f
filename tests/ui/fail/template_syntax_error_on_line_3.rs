fn main() {
    let _chain = protege::resolvers! {
        use LoadText(r#"You are {{ persona.name }}.
{% if message %}
Reply to {{ message.from }.
{% endif %}"#);
    };
}
